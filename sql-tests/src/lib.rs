//! End-to-end test support: start a `brook` server process on a free port with a fresh data
//! directory, connect to it over the wire, and run sqllogictest files against it.
//!
//! # Layout
//! - [`BrookServer`]: a server process owned by a test (killed on drop).
//! - [`SltClient`]: the sqllogictest database adapter, in simple or extended protocol mode.
//! - [`postgres`]: a throw-away PostgreSQL server for differential tests.

pub mod postgres;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// This crate's directory (test files live under it). Read when the test runs — cargo sets
/// it — so a test binary built from another checkout sharing the build directory still
/// finds this checkout's files.
pub fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Path of the `brook` binary: `$BROOK_BIN`, else next to the test executable's target dir.
pub fn brook_bin() -> PathBuf {
    if let Ok(p) = std::env::var("BROOK_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test> -> target/<profile>/brook
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("brook");
    assert!(
        bin.exists(),
        "brook binary not found at {}; run `cargo build -p brook` first",
        bin.display()
    );
    bin
}

/// A running server process.
pub struct BrookServer {
    child: Option<Child>,
    /// `host:port` it listens on.
    pub addr: String,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// What it wrote to stderr so far (also echoed to the test's stderr).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _tmp: Option<tempfile::TempDir>,
}

impl BrookServer {
    /// Start on a fresh temporary data directory. With `$BROOK_TEST_CLUSTER` (a NATS URL)
    /// the server is a one-node cluster with a log of its own: the same tests then check
    /// that cluster mode gives a single server's answers.
    pub fn start() -> BrookServer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let cluster = std::env::var("BROOK_TEST_CLUSTER").ok();
        let name: String = dir
            .to_string_lossy()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let env: Vec<(&str, &str)> = match &cluster {
            Some(url) => vec![
                ("BROOK_CLUSTER", url.as_str()),
                ("BROOK_NODE_ID", "test"),
                ("BROOK_CLUSTER_NAME", name.as_str()),
            ],
            None => Vec::new(),
        };
        let mut s = Self::start_on(&dir, &env).expect("server starts");
        s._tmp = Some(tmp);
        s
    }

    /// Start on `data_dir` (kept), with extra environment.
    pub fn start_on(data_dir: &Path, env: &[(&str, &str)]) -> Result<BrookServer, String> {
        let mut cmd = Command::new(brook_bin());
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(data_dir)
            .env_remove("BROOK_PASSWORD")
            .env(
                "BROOK_LOG",
                std::env::var("BROOK_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(|e| format!("spawn brook: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(l)) => {
                    if let Some(a) = l.strip_prefix("brook listening on ") {
                        break a.trim().to_string();
                    }
                }
                _ => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        use std::io::Read;
                        let _ = e.read_to_string(&mut err);
                    }
                    let _ = child.wait();
                    return Err(format!("brook exited before listening: {err}"));
                }
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                    eprintln!("[brook] {l}");
                    if let Ok(mut g) = log.lock() {
                        g.push(l);
                    }
                }
            });
        }
        Ok(BrookServer {
            child: Some(child),
            addr,
            data_dir: data_dir.to_path_buf(),
            log,
            _tmp: None,
        })
    }

    /// Port it listens on.
    pub fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// libpq-style connection string for database `db`.
    pub fn conn_str(&self, db: &str) -> String {
        format!("host=127.0.0.1 port={} user=brook dbname={db}", self.port())
    }

    /// Connect with tokio-postgres.
    pub async fn connect(&self, db: &str) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.conn_str(db), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
    }

    /// Connect with tokio-postgres, also handing back the connection's task: aborting it
    /// makes the client vanish without a word.
    pub async fn connect_vanishable(
        &self,
        db: &str,
    ) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
        let (client, conn) = tokio_postgres::connect(&self.conn_str(db), tokio_postgres::NoTls)
            .await
            .expect("connect");
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        (client, task)
    }

    /// Kill with SIGKILL (no shutdown work at all) and wait for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY-free: std's kill sends SIGKILL on Unix.
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Pid of the process.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }
}

impl Drop for BrookServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `SELECT count(*)` of a relation.
pub async fn count(c: &tokio_postgres::Client, rel: &str) -> i64 {
    c.query_one(&format!("SELECT count(*) FROM {rel}"), &[])
        .await
        .expect("count")
        .get(0)
}

/// The SQLSTATE of a failed statement (or what the error was, when the server sent none).
pub fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.code().code().to_string())
        .unwrap_or_else(|| format!("no db error: {e}"))
}

/// How many continuous queries run in the client's database.
pub async fn running_queries(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT count(*) FROM brook_continuous_queries()", &[])
        .await
        .expect("list queries")
        .get(0)
}

/// `COPY ... FROM STDIN` of `data` in one message; the rows the server reports.
pub async fn copy_in(
    client: &tokio_postgres::Client,
    sql: &str,
    data: &[u8],
) -> Result<u64, tokio_postgres::Error> {
    use futures::SinkExt;
    let sink = client.copy_in::<_, std::io::Cursor<Vec<u8>>>(sql).await?;
    futures::pin_mut!(sink);
    sink.send(std::io::Cursor::new(data.to_vec())).await?;
    sink.finish().await
}

/// A StartupMessage (protocol 3.0) for role and database `brook`.
pub fn startup_message() -> Vec<u8> {
    let params = b"user\0brook\0database\0brook\0\0";
    let mut m = Vec::new();
    m.extend_from_slice(&((8 + params.len()) as i32).to_be_bytes());
    m.extend_from_slice(&196608i32.to_be_bytes());
    m.extend_from_slice(params);
    m
}

/// Read from `s` until `reply` holds `n` ReadyForQuery messages (panics if the server
/// closes first).
pub async fn read_until_ready(s: &mut tokio::net::TcpStream, reply: &mut Vec<u8>, n: usize) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 8192];
    while reply.windows(5).filter(|w| *w == b"Z\0\0\0\x05").count() < n {
        let got = s.read(&mut buf).await.expect("read");
        assert!(got > 0, "the server closed the connection");
        reply.extend_from_slice(&buf[..got]);
    }
}

/// Append a protocol message (`tag`, its length, `body`) to `m`, for tests that send
/// hand-made messages.
pub fn push_message(m: &mut Vec<u8>, tag: u8, body: &[u8]) {
    m.push(tag);
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
}

/// A raw protocol connection, past startup (for tests that send hand-made messages).
pub async fn raw_session(addr: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("tcp");
    s.write_all(&startup_message()).await.expect("startup");
    read_until_ready(&mut s, &mut Vec::new(), 1).await;
    s
}

/// Protocol mode of the sqllogictest adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Simple query protocol: results as PostgreSQL text.
    Simple,
    /// Extended protocol (Parse/Bind/Execute) with binary results, rendered as text here.
    Extended,
}

/// sqllogictest adapter over tokio-postgres.
pub struct SltClient {
    client: tokio_postgres::Client,
    mode: Mode,
}

impl SltClient {
    /// Wrap a connected client.
    pub fn new(client: tokio_postgres::Client, mode: Mode) -> Self {
        SltClient { client, mode }
    }
}

/// Errors as sqllogictest sees them: the server's message (and SQLSTATE).
#[derive(Debug)]
pub struct SltError(pub String);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SltError {}

fn pg_err(e: tokio_postgres::Error) -> SltError {
    match e.as_db_error() {
        Some(d) => SltError(format!("{} (SQLSTATE {})", d.message(), d.code().code())),
        None => SltError(e.to_string()),
    }
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for SltClient {
    type Error = SltError;
    type ColumnType = sqllogictest::DefaultColumnType;

    async fn run(
        &mut self,
        sql: &str,
    ) -> Result<sqllogictest::DBOutput<Self::ColumnType>, SltError> {
        match self.mode {
            Mode::Simple => run_simple(&self.client, sql).await,
            Mode::Extended => run_extended(&self.client, sql).await,
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "brook"
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }
}

async fn run_simple(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<sqllogictest::DBOutput<sqllogictest::DefaultColumnType>, SltError> {
    use tokio_postgres::SimpleQueryMessage as M;
    let msgs = client.simple_query(sql).await.map_err(pg_err)?;
    let mut rows = Vec::new();
    let mut width = None;
    let mut count = 0;
    for m in msgs {
        match m {
            M::Row(r) => {
                rows.push((0..r.len()).map(|i| cell(r.get(i))).collect::<Vec<_>>());
            }
            M::RowDescription(d) => width = Some(d.len()),
            M::CommandComplete(n) => count = n,
            _ => {}
        }
    }
    Ok(match width {
        Some(w) => sqllogictest::DBOutput::Rows {
            types: vec![sqllogictest::DefaultColumnType::Any; w],
            rows,
        },
        None => sqllogictest::DBOutput::StatementComplete(count),
    })
}

fn cell(v: Option<&str>) -> String {
    match v {
        None => "NULL".into(),
        Some("") => "(empty)".into(),
        Some(s) => s.to_string(),
    }
}

async fn run_extended(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<sqllogictest::DBOutput<sqllogictest::DefaultColumnType>, SltError> {
    let stmt = client.prepare(sql).await.map_err(pg_err)?;
    if stmt.columns().is_empty() {
        let n = client.execute(&stmt, &[]).await.map_err(pg_err)?;
        return Ok(sqllogictest::DBOutput::StatementComplete(n));
    }
    let rows = client.query(&stmt, &[]).await.map_err(pg_err)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let mut line = Vec::with_capacity(r.len());
        for (i, c) in r.columns().iter().enumerate() {
            line.push(render(r, i, c.type_())?);
        }
        out.push(line);
    }
    Ok(sqllogictest::DBOutput::Rows {
        types: vec![sqllogictest::DefaultColumnType::Any; stmt.columns().len()],
        rows: out,
    })
}

/// A binary-format numeric as PostgreSQL's text shows it. `rust_decimal` holds 28 digits,
/// Brook's numerics 38 (`div(1e30, 7)`), so the runner reads the base-10000 form itself.
struct NumericText(String);

impl<'a> tokio_postgres::types::FromSql<'a> for NumericText {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let word = |i: usize| -> Result<u16, Box<dyn std::error::Error + Sync + Send>> {
            let b = raw.get(2 * i..2 * i + 2).ok_or("short numeric")?;
            Ok(u16::from_be_bytes([b[0], b[1]]))
        };
        let (n, weight, sign, dscale) = (word(0)?, word(1)? as i16, word(2)?, word(3)?);
        if sign == 0xC000 {
            return Ok(NumericText("NaN".into()));
        }
        let mut digits = String::new();
        for k in 0..usize::from(n) {
            digits.push_str(&format!("{:04}", word(4 + k)?));
        }
        // The point falls after 4·(weight + 1) of these digits.
        let point = 4 * (i32::from(weight) + 1);
        let (int, frac) = if point <= 0 {
            (
                String::new(),
                format!("{}{digits}", "0".repeat((-point) as usize)),
            )
        } else if point as usize >= digits.len() {
            (
                format!("{digits}{}", "0".repeat(point as usize - digits.len())),
                String::new(),
            )
        } else {
            let (i, f) = digits.split_at(point as usize);
            (i.to_string(), f.to_string())
        };
        let int = int.trim_start_matches('0');
        let mut frac: String = frac.chars().take(usize::from(dscale)).collect();
        while frac.len() < usize::from(dscale) {
            frac.push('0');
        }
        let mut text = String::new();
        if sign == 0x4000 {
            text.push('-');
        }
        text.push_str(if int.is_empty() { "0" } else { int });
        if !frac.is_empty() {
            text.push('.');
            text.push_str(&frac);
        }
        Ok(NumericText(text))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::NUMERIC
    }
}

/// Render column `i` of a binary-format row the way PostgreSQL's text output shows it.
fn render(
    r: &tokio_postgres::Row,
    i: usize,
    ty: &tokio_postgres::types::Type,
) -> Result<String, SltError> {
    let raw = r
        .try_get::<_, Option<RawValue>>(i)
        .map_err(|e| SltError(e.to_string()))?;
    let v = match &raw {
        Some(v) => Some(shown(ty, &v.0)?),
        None => None,
    };
    Ok(cell(v.as_deref()))
}

/// A binary-format value of type `ty` (not NULL) as PostgreSQL's text output shows it.
fn shown(ty: &tokio_postgres::types::Type, raw: &[u8]) -> Result<String, SltError> {
    use tokio_postgres::types::{FromSql, Type};
    macro_rules! get {
        ($t:ty, $f:expr) => {
            // (Through `map`, which types the closure's argument.)
            Some(<$t as FromSql>::from_sql(ty, raw).map_err(|e| SltError(e.to_string()))?)
                .map($f)
                .unwrap_or_default()
        };
    }
    Ok(match *ty {
        Type::BOOL => get!(bool, |b| if b { "t".to_string() } else { "f".to_string() }),
        Type::INT2 => get!(i16, |v| v.to_string()),
        Type::INT4 => get!(i32, |v| v.to_string()),
        Type::INT8 => get!(i64, |v| v.to_string()),
        Type::FLOAT4 => get!(f32, |v| pg_float(v as f64, 6, Some(v))),
        Type::FLOAT8 => get!(f64, |v| pg_float(v, 15, None)),
        Type::NUMERIC => get!(NumericText, |v| v.0),
        Type::DATE => get!(chrono::NaiveDate, |v| v.to_string()),
        Type::TIMESTAMP => get!(chrono::NaiveDateTime, |v| v.to_string()),
        Type::TIMESTAMPTZ => get!(chrono::DateTime<chrono::Utc>, |v| format!(
            "{}+00",
            v.naive_utc()
        )),
        Type::BYTEA => get!(Vec<u8>, |v| format!(
            "\\x{}",
            v.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )),
        Type::INT2_ARRAY => get!(Vec<Option<i16>>, |v| pg_array(v, |x| x.to_string())),
        Type::INT4_ARRAY => get!(Vec<Option<i32>>, |v| pg_array(v, |x| x.to_string())),
        Type::INT8_ARRAY => get!(Vec<Option<i64>>, |v| pg_array(v, |x| x.to_string())),
        Type::FLOAT8_ARRAY => get!(Vec<Option<f64>>, |v| pg_array(v, |x| pg_float(x, 15, None))),
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY => {
            get!(Vec<Option<String>>, |v| pg_array(v, |x| x))
        }
        Type::BYTEA_ARRAY => get!(Vec<Option<Vec<u8>>>, |v| pg_array(v, |b| format!(
            "\\x{}",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ))),
        // jsonb's binary form is a version byte, then the JSON text; json's is the text.
        Type::JSONB => get!(RawValue, |j| String::from_utf8_lossy(
            j.0.get(1..).unwrap_or_default()
        )
        .into_owned()),
        Type::JSON | Type::XML => get!(RawValue, |j| String::from_utf8_lossy(&j.0).into_owned()),
        Type::XML_ARRAY => get!(Vec<Option<RawValue>>, |v| pg_array(v, |x| {
            String::from_utf8_lossy(&x.0).into_owned()
        })),
        Type::JSONB_ARRAY => get!(Vec<Option<RawValue>>, |v| pg_array(v, |j| {
            String::from_utf8_lossy(j.0.get(1..).unwrap_or_default()).into_owned()
        })),
        Type::BOOL_ARRAY => get!(Vec<Option<bool>>, |v| pg_array(v, |b| {
            if b { "t" } else { "f" }.to_string()
        })),
        Type::FLOAT4_ARRAY => get!(Vec<Option<f32>>, |v| pg_array(v, |x| pg_float(
            x as f64,
            6,
            Some(x)
        ))),
        Type::NUMERIC_ARRAY => get!(Vec<Option<rust_decimal::Decimal>>, |v| pg_array(v, |x| x
            .to_string())),
        Type::DATE_ARRAY => get!(Vec<Option<chrono::NaiveDate>>, |v| pg_array(v, |x| x
            .to_string())),
        Type::TIMESTAMP_ARRAY => get!(Vec<Option<chrono::NaiveDateTime>>, |v| pg_array(v, |x| x
            .to_string())),
        Type::UUID => get!(RawValue, |v| {
            let h: String = v.0.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() == 32 {
                format!(
                    "{}-{}-{}-{}-{}",
                    &h[..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..]
                )
            } else {
                format!("<uuid of {} bytes>", v.0.len())
            }
        }),
        Type::INTERVAL => get!(RawValue, |v| match <[u8; 16]>::try_from(v.0.as_slice()) {
            Ok(b) => {
                let micros = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                let days = i32::from_be_bytes([b[8], b[9], b[10], b[11]]);
                let months = i32::from_be_bytes([b[12], b[13], b[14], b[15]]);
                let mut out = String::new();
                brook_common::types::format_interval_fields(months, days, micros, &mut out);
                out
            }
            Err(_) => format!("<interval of {} bytes>", v.0.len()),
        }),
        Type::RECORD => record_text(raw)?,
        _ => get!(String, |v: String| v),
    })
}

/// A binary-format record (field count, then each field's type oid, length and bytes) as
/// PostgreSQL's text output shows it: `(1,"a b",)`.
fn record_text(raw: &[u8]) -> Result<String, SltError> {
    let int = |at: usize| -> Result<i32, SltError> {
        raw.get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_be_bytes)
            .ok_or_else(|| SltError("a binary record ends early".into()))
    };
    let mut out = String::from("(");
    let mut at = 4;
    for k in 0..int(0)? {
        if k > 0 {
            out.push(',');
        }
        let (oid, len) = (int(at)? as u32, int(at + 4)?);
        at += 8;
        if len < 0 {
            continue;
        }
        let bytes = raw
            .get(at..at + len as usize)
            .ok_or_else(|| SltError("a binary record ends early".into()))?;
        at += len as usize;
        let ty = tokio_postgres::types::Type::from_oid(oid)
            .ok_or_else(|| SltError(format!("a record field of type oid {oid}")))?;
        brook_common::types::push_record_field(&mut out, &shown(&ty, bytes)?);
    }
    out.push(')');
    Ok(out)
}

/// A value's bytes as the server sent them (for types tokio-postgres decodes only behind
/// a feature: uuid).
struct RawValue(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for RawValue {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(raw.to_vec()))
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }
}

/// PostgreSQL's array text output: `{a,NULL,"b c"}`.
fn pg_array<T>(items: Vec<Option<T>>, show: impl Fn(T) -> String) -> String {
    let shown: Vec<String> = items
        .into_iter()
        .map(|x| match x {
            None => "NULL".to_string(),
            Some(x) => {
                let t = show(x);
                let quote = t.is_empty()
                    || t.eq_ignore_ascii_case("null")
                    || t.chars()
                        .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
                if quote {
                    format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""))
                } else {
                    t
                }
            }
        })
        .collect();
    format!("{{{}}}", shown.join(","))
}

/// PostgreSQL's shortest float text (exponent form when exp < -4 or >= digits).
pub fn pg_float(v: f64, digits: i32, f32v: Option<f32>) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = match f32v {
        Some(f) => format!("{f:e}"),
        None => format!("{v:e}"),
    };
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= digits {
        format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        match f32v {
            Some(f) => format!("{f}"),
            None => format!("{v}"),
        }
    }
}
