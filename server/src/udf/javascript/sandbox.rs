//! The sandbox a `LANGUAGE javascript` function runs in.
//!
//! Each function runs in a QuickJS runtime of its own (the `rquickjs` crate): an
//! interpreter with the language's standard objects and nothing else — no file, network,
//! process or timer API, so a function computes over its arguments and can reach nothing of
//! the server. A runtime has a memory limit ([`MEMORY_LIMIT`]: 53200 past it), a stack limit
//! (54001 for runaway recursion) and a time limit per call ([`CALL_TIME_LIMIT`]: 57014), so no
//! function can take the server's memory or hold a statement thread for good; a call also
//! stops when its statement is cancelled (a cancel request, `statement_timeout`).
//!
//! Creating a runtime and compiling the function costs far more than a call, and an
//! aggregate calls its transition function once per row (with one-row batches). So each thread keeps the
//! sandboxes of the functions it ran last ([`CACHED_PER_THREAD`]), and a call reuses one:
//! like PL/v8's per-session context, global variables a function sets may be seen by its
//! later calls on that thread (a function should not rely on them either way). A sandbox
//! that failed for a limit, or holds more than [`CACHED_MEMORY`], is dropped, and the next
//! call starts a fresh one.

use super::values::js_internal;
use brook_common::{BrookError, Result};
use rquickjs::{Context, Ctx, Function, Persistent, Runtime};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Memory a function's runtime may allocate (its heap: objects, strings, arrays).
pub const MEMORY_LIMIT: usize = 64 << 20;
/// Stack a function's JavaScript recursion may use (less where the thread has less left).
const STACK_LIMIT: usize = 1 << 20;
/// Stack kept free below a call for the Rust frames around it.
const STACK_MARGIN: usize = 256 << 10;
/// Time one call (one row) may take before it is stopped.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(10);
/// Characters of a thrown message an error keeps (it is sent and logged).
const MESSAGE_CHARS: usize = 2000;
/// Sandboxes a thread keeps for reuse.
const CACHED_PER_THREAD: usize = 8;
/// A sandbox holding more memory than this after a call is not kept (what its globals
/// hold would stay allocated between statements).
const CACHED_MEMORY: i64 = 8 << 20;

/// A compiled function in its own runtime. Fields drop in order: the function, its
/// context, then the runtime that holds them.
struct Sandbox {
    /// Which definition of which function this is ([`super::JsFunction::id`]).
    id: u64,
    function: Persistent<Function<'static>>,
    context: Context,
    watch: Watch,
    runtime: Runtime,
}

thread_local! {
    /// The sandboxes this thread ran last, the most recent last.
    static SANDBOXES: RefCell<Vec<Sandbox>> = const { RefCell::new(Vec::new()) };
}

/// The call under way as the runtime's interrupt handler reads it: its deadline and its
/// statement's cancellation token.
#[derive(Default)]
struct Call {
    deadline: Option<Instant>,
    cancel: Option<CancellationToken>,
}

/// Why the interrupt handler stopped a call.
const RUNNING: u8 = 0;
const TOO_LONG: u8 = 1;
const CANCELLED: u8 = 2;

/// The call under way, and whether (and why) the handler stopped it.
#[derive(Clone)]
pub struct Watch {
    /// Time a call may take ([`CALL_TIME_LIMIT`]).
    limit: Duration,
    call: Arc<Mutex<Call>>,
    stopped: Arc<AtomicU8>,
}

impl Watch {
    /// A call starts now: it may run the time limit, and stops when `cancel` is
    /// cancelled (the statement's token).
    pub fn start_call(&self, cancel: Option<&CancellationToken>) {
        self.stopped.store(RUNNING, Ordering::Relaxed);
        *lock(&self.call) = Call {
            deadline: Some(Instant::now() + self.limit),
            cancel: cancel.cloned(),
        };
    }

    /// The error of a call (or compilation) that failed with `e`: the function's own
    /// exception (P0001, with its message), or the limit it ran into.
    pub fn error(&self, ctx: &Ctx<'_>, e: rquickjs::Error, function: &str) -> BrookError {
        let stopped = self.stopped.load(Ordering::Relaxed);
        if stopped == CANCELLED {
            return BrookError::Canceled;
        }
        if stopped == TOO_LONG {
            return BrookError::Timeout {
                message: format!(
                    "JavaScript function {function} was stopped: one call ran longer than {} ms",
                    self.limit.as_millis()
                ),
                code: "57014",
            };
        }
        if !matches!(e, rquickjs::Error::Exception) {
            return js_internal(e);
        }
        let thrown = ctx.catch();
        let (kind, message) = match thrown.as_exception() {
            Some(ex) => {
                let kind: String = ex.get("name").unwrap_or_else(|_| "Error".into());
                (kind, ex.message().unwrap_or_default())
            }
            None => {
                let text: String = thrown
                    .get::<rquickjs::convert::Coerced<String>>()
                    .map(|c| c.0)
                    .unwrap_or_else(|_| thrown.type_name().to_string());
                (String::new(), text)
            }
        };
        if message == "out of memory" {
            return BrookError::out_of_memory(format!(
                "JavaScript function {function} allocated more than its {} MiB",
                MEMORY_LIMIT >> 20
            ));
        }
        if message.starts_with("stack overflow") || message == "Maximum call stack size exceeded" {
            return BrookError::too_complex(format!(
                "JavaScript function {function}: stack depth limit exceeded (recursion too deep)"
            ));
        }
        let mut text = if kind.is_empty() {
            message
        } else {
            format!("{kind}: {message}")
        };
        if let Some((cut, _)) = text.char_indices().nth(MESSAGE_CHARS) {
            text.truncate(cut);
            text.push_str("...");
        }
        BrookError::Semantic {
            message: format!("JavaScript function {function}: {text}"),
            code: if kind == "SyntaxError" {
                "42601"
            } else {
                "P0001"
            },
        }
    }

    /// Whether the error `e` came from a limit (the sandbox is then dropped).
    fn spent(e: &BrookError) -> bool {
        matches!(e.sqlstate(), "57014" | "53200" | "54001")
    }
}

/// A function's parameter names and body, compiled by JavaScript's `Function`
/// constructor. (QuickJS's wraps the body in a function expression and evaluates it, so a
/// body that closes that function runs code around it, within the sandbox's limits, as
/// any function of its author's would.)
#[derive(Debug)]
pub struct Source {
    pub params: Vec<String>,
    pub body: String,
}

/// Run `work` with the compiled function `source` of the definition `id`, in this thread's sandbox for it (made when there is none, its calls
/// stopped after `limit`). `function` names it in messages.
pub fn with_function<T>(
    id: u64,
    source: &Source,
    function: &str,
    limit: Duration,
    work: impl for<'js> FnOnce(&Ctx<'js>, &Function<'js>, &Watch) -> Result<T>,
) -> Result<T> {
    let cached = SANDBOXES.with(|cell| {
        let mut list = cell.try_borrow_mut().ok()?;
        let at = list.iter().position(|s| s.id == id)?;
        Some(list.remove(at))
    });
    let sandbox = match cached {
        Some(s) => s,
        None => compile(id, source, function, limit)?,
    };
    // QuickJS measures its stack from where `with` is entered: this call's budget is
    // what this thread has left here (a cached sandbox last ran elsewhere).
    sandbox.runtime.set_max_stack_size(stack_budget(function)?);
    let result = sandbox.context.with(|ctx| {
        let f = sandbox
            .function
            .clone()
            .restore(&ctx)
            .map_err(js_internal)?;
        work(&ctx, &f, &sandbox.watch)
    });
    let keep = !result.as_ref().is_err_and(Watch::spent)
        && sandbox.runtime.memory_usage().malloc_size <= CACHED_MEMORY;
    if keep {
        SANDBOXES.with(|cell| {
            if let Ok(mut list) = cell.try_borrow_mut() {
                if list.len() >= CACHED_PER_THREAD {
                    list.remove(0);
                }
                list.push(sandbox);
            }
        });
    }
    result
}

/// Check that `source` compiles (at CREATE FUNCTION), in a sandbox thrown away after.
pub fn check(source: &Source, function: &str) -> Result<()> {
    compile(0, source, function, CALL_TIME_LIMIT).map(|_| ())
}

/// The stack a call entered here may use: [`STACK_LIMIT`], or what this thread has left
/// less [`STACK_MARGIN`] (a thread with a small stack, or deep in a plan); 54001 when
/// too little is left for a call at all.
fn stack_budget(function: &str) -> Result<usize> {
    let left = stacker::remaining_stack().unwrap_or(STACK_LIMIT + STACK_MARGIN);
    let budget = left.saturating_sub(STACK_MARGIN).min(STACK_LIMIT);
    if budget < STACK_MARGIN / 4 {
        return Err(BrookError::too_complex(format!(
            "JavaScript function {function}: too little stack is left to call it"
        )));
    }
    Ok(budget)
}

/// The call, whatever a panicking holder left in it.
fn lock(call: &Mutex<Call>) -> std::sync::MutexGuard<'_, Call> {
    call.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new runtime with its limits, and `source` compiled in it.
fn compile(id: u64, source: &Source, function: &str, limit: Duration) -> Result<Sandbox> {
    let runtime = Runtime::new().map_err(js_internal)?;
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(stack_budget(function)?);
    let watch = Watch {
        limit,
        call: Arc::default(),
        stopped: Arc::default(),
    };
    let (call, stopped) = (watch.call.clone(), watch.stopped.clone());
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let call = lock(&call);
        let why = if call.cancel.as_ref().is_some_and(|t| t.is_cancelled()) {
            CANCELLED
        } else if call.deadline.is_some_and(|d| Instant::now() >= d) {
            TOO_LONG
        } else {
            return false;
        };
        stopped.store(why, Ordering::Relaxed);
        true
    })));
    let context = Context::full(&runtime).map_err(js_internal)?;
    let function_value = context.with(|ctx| {
        let constructor: rquickjs::Constructor<'_> =
            ctx.globals().get("Function").map_err(js_internal)?;
        let mut args = rquickjs::function::Args::new(ctx.clone(), source.params.len() + 1);
        for p in &source.params {
            args.push_arg(p.as_str()).map_err(js_internal)?;
        }
        args.push_arg(source.body.as_str()).map_err(js_internal)?;
        watch.start_call(None);
        let f: Function<'_> = constructor
            .construct_args(args)
            .map_err(|e| watch.error(&ctx, e, function))?;
        Ok::<_, BrookError>(Persistent::save(&ctx, f))
    })?;
    Ok(Sandbox {
        id,
        function: function_value,
        context,
        watch,
        runtime,
    })
}
