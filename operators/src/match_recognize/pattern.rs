//! Row patterns of `MATCH_RECOGNIZE`: the pattern as a tree, compiled once per query into a
//! small backtracking program, and the matcher that runs it over a partition's rows.
//!
//! SQL:2016 picks among the ways a pattern can match by preference, as Perl-style regular
//! expressions do (alternatives left to right, greedy quantifiers longest first), not by
//! length; a backtracking program visits the ways in exactly that order, so the first way
//! that reaches the end is the match. Which variables a row can be is known before matching
//! (each DEFINE condition reads the row and rows at fixed offsets before it), so a state
//! (instruction, row) that failed once fails again: the matcher remembers them, which bounds
//! one attempt by instructions × rows. Written here because no Rust regex crate matches over
//! rows with SQL's preference order and "needs more input" answers.

use brook_common::{brook_err, BrookError, Result};
use datafusion::common::HashSet;

/// A row pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// One row that is the variable (its index).
    Var(usize),
    /// The start of the partition (`^`).
    Start,
    /// The end of the partition (`$`).
    End,
    /// The parts one after another.
    Concat(Vec<Pattern>),
    /// `{- inner -}`: rows it matches are part of the match but not shown (ALL ROWS).
    Exclude(Box<Pattern>),
    /// The first alternative that leads to a match (`a | b`).
    Alt(Vec<Pattern>),
    /// `inner{min,max}` (`max` None: no bound): greedy (the most repetitions first) or
    /// reluctant (`inner{min,max}?`: the fewest first).
    Repeat {
        inner: Box<Pattern>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
    },
}

/// Most instructions a compiled pattern may have (bounded quantifiers are unrolled).
pub const MAX_PROGRAM: usize = 10_000;

/// Most steps of one match attempt whose conditions read the match so far (such attempts
/// cannot remember failed states: a pattern of nested quantifiers could take exponential
/// time).
pub const MAX_STEPS: usize = 1_000_000;

impl Pattern {
    /// True when the pattern can match no rows at all.
    pub fn can_be_empty(&self) -> bool {
        match self {
            Pattern::Var(_) => false,
            Pattern::Start | Pattern::End => true,
            Pattern::Concat(ps) => ps.iter().all(Pattern::can_be_empty),
            Pattern::Exclude(inner) => inner.can_be_empty(),
            Pattern::Alt(ps) => ps.iter().any(Pattern::can_be_empty),
            Pattern::Repeat { inner, min, .. } => *min == 0 || inner.can_be_empty(),
        }
    }

    /// True when the pattern has an exclusion `{- -}`.
    pub fn excludes(&self) -> bool {
        match self {
            Pattern::Exclude(_) => true,
            Pattern::Var(_) | Pattern::Start | Pattern::End => false,
            Pattern::Concat(ps) | Pattern::Alt(ps) => ps.iter().any(Pattern::excludes),
            Pattern::Repeat { inner, .. } => inner.excludes(),
        }
    }

    /// True when the pattern uses `$` (the end of the partition, never known on a stream).
    pub fn uses_end(&self) -> bool {
        match self {
            Pattern::End => true,
            Pattern::Var(_) | Pattern::Start => false,
            Pattern::Concat(ps) | Pattern::Alt(ps) => ps.iter().any(Pattern::uses_end),
            Pattern::Exclude(inner) => inner.uses_end(),
            Pattern::Repeat { inner, .. } => inner.uses_end(),
        }
    }

    /// Whether a part repeated without an upper bound can take any row: a variable no
    /// condition restricts (`defined` says which are), or parts made of such. Over a
    /// stream without WITHIN such an attempt holds every later row.
    pub fn repeats_any_row(&self, defined: &dyn Fn(usize) -> bool) -> bool {
        match self {
            Pattern::Var(_) | Pattern::Start | Pattern::End => false,
            Pattern::Concat(ps) | Pattern::Alt(ps) => ps.iter().any(|p| p.repeats_any_row(defined)),
            Pattern::Exclude(inner) => inner.repeats_any_row(defined),
            Pattern::Repeat { inner, max, .. } => {
                (max.is_none() && inner.takes_any_row(defined)) || inner.repeats_any_row(defined)
            }
        }
    }

    /// Whether every row can be matched by this part (each of its steps takes any row).
    fn takes_any_row(&self, defined: &dyn Fn(usize) -> bool) -> bool {
        match self {
            Pattern::Var(v) => !defined(*v),
            Pattern::Start | Pattern::End => false,
            Pattern::Alt(ps) => ps.iter().any(|p| p.takes_any_row(defined)),
            Pattern::Concat(ps) => !ps.is_empty() && ps.iter().all(|p| p.takes_any_row(defined)),
            Pattern::Exclude(inner) | Pattern::Repeat { inner, .. } => inner.takes_any_row(defined),
        }
    }

    /// Check what the matcher relies on: a quantified part matches at least one row per
    /// repetition (otherwise a repetition could loop without consuming rows), and bounds
    /// are ordered.
    pub fn validate(&self) -> Result<()> {
        match self {
            Pattern::Var(_) | Pattern::Start | Pattern::End => Ok(()),
            Pattern::Concat(ps) | Pattern::Alt(ps) => ps.iter().try_for_each(Pattern::validate),
            Pattern::Exclude(inner) => inner.validate(),
            Pattern::Repeat {
                inner, min, max, ..
            } => {
                if max.is_some_and(|m| m < *min) {
                    return Err(brook_err!(
                        Syntax,
                        "pattern quantifier {{{min},{}}} has its bounds reversed",
                        max.unwrap_or_default()
                    ));
                }
                if max == &Some(0) {
                    return Err(brook_err!(
                        Unsupported,
                        "a pattern quantifier that allows no rows ({{0}}): empty matches"
                    ));
                }
                if inner.can_be_empty() {
                    return Err(brook_err!(
                        Unsupported,
                        "a quantified pattern part that can match no rows (such as (A?)*)"
                    ));
                }
                inner.validate()
            }
        }
    }
}

/// Confirms that a row can be a variable after the path so far: `(row, variable, path,
/// stable)`, where the first `stable` entries of the path are those of the previous call's
/// (so what the caller derived from them still holds).
pub type CheckFn<'a> = dyn FnMut(usize, usize, &[usize], usize) -> Result<bool> + 'a;

/// One instruction of a compiled pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Consume a row that can be the variable (hidden: inside `{- -}`).
    Var {
        var: usize,
        hidden: bool,
    },
    /// Continue at both, the first preferred.
    Split(usize, usize),
    Jump(usize),
    Start,
    End,
    Match,
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Program {
    ops: Vec<Op>,
    /// Emitting inside `{- -}`.
    hiding: bool,
}

/// The rows of a match: the variable of each row from the start on, and whether the row
/// is hidden (matched inside `{- -}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    pub vars: Vec<usize>,
    pub hidden: Vec<bool>,
}

/// What an attempt to match at a row found.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The preferred match.
    Match(Path),
    /// No match starts at the row.
    NoMatch,
    /// Rows still to come decide it. The path is the preferred way the rows seen so far
    /// may still become a match (what `SHOW PARTIAL MATCHES` shows): every way the
    /// pattern prefers to it failed on them.
    NeedMore(Path),
}

impl Program {
    /// Compile `p` (validated).
    pub fn compile(p: &Pattern) -> Result<Program> {
        let mut prog = Program {
            ops: Vec::new(),
            hiding: false,
        };
        prog.emit(p)?;
        prog.ops.push(Op::Match);
        Ok(prog)
    }

    fn push(&mut self, op: Op) -> Result<usize> {
        if self.ops.len() >= MAX_PROGRAM {
            return Err(BrookError::too_complex(format!(
                "row pattern too large once its quantifiers are expanded (limit {MAX_PROGRAM} steps)"
            )));
        }
        self.ops.push(op);
        Ok(self.ops.len() - 1)
    }

    fn emit(&mut self, p: &Pattern) -> Result<()> {
        match p {
            Pattern::Var(v) => {
                self.push(Op::Var {
                    var: *v,
                    hidden: self.hiding,
                })?;
            }
            Pattern::Exclude(inner) => {
                let outer = self.hiding;
                self.hiding = true;
                self.emit(inner)?;
                self.hiding = outer;
            }
            Pattern::Start => {
                self.push(Op::Start)?;
            }
            Pattern::End => {
                self.push(Op::End)?;
            }
            Pattern::Concat(ps) => {
                for q in ps {
                    self.emit(q)?;
                }
            }
            Pattern::Alt(ps) => {
                // split L1, next; L1: a; jump end; next: split L2, ... ; last: z; end:
                let mut jumps = Vec::new();
                for (i, q) in ps.iter().enumerate() {
                    if i + 1 < ps.len() {
                        let split = self.push(Op::Split(0, 0))?;
                        self.emit(q)?;
                        jumps.push(self.push(Op::Jump(0))?);
                        let next = self.ops.len();
                        self.ops[split] = Op::Split(split + 1, next);
                    } else {
                        self.emit(q)?;
                    }
                }
                let end = self.ops.len();
                for j in jumps {
                    self.ops[j] = Op::Jump(end);
                }
            }
            Pattern::Repeat {
                inner,
                min,
                max,
                greedy,
            } => {
                for _ in 0..*min {
                    self.emit(inner)?;
                }
                // A greedy repetition prefers one more pass of the body; a reluctant one
                // prefers to leave.
                let choose = |body: usize, out: usize| {
                    if *greedy {
                        Op::Split(body, out)
                    } else {
                        Op::Split(out, body)
                    }
                };
                match max {
                    None => {
                        // loop: split body, out; body: inner; jump loop; out:
                        let split = self.push(Op::Split(0, 0))?;
                        self.emit(inner)?;
                        self.push(Op::Jump(split))?;
                        let out = self.ops.len();
                        self.ops[split] = choose(split + 1, out);
                    }
                    Some(max) => {
                        // Each optional repetition: split body, out (all outs to the end).
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Op::Split(0, 0))?);
                            self.emit(inner)?;
                        }
                        let out = self.ops.len();
                        for s in splits {
                            self.ops[s] = choose(s + 1, out);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Match starting at row `start` of `eligible` (bit v of a row: the row can be variable
    /// v). `at_partition_start`: `start` is the partition's first row; `finished`: no rows
    /// follow the last of `eligible`. A variable of `checked` (bit v) whose bit is set is
    /// confirmed by `check(row, v, path so far)`. When the condition of one of them reads
    /// the match so far (`path_dependent`), a state that failed once may pass on another
    /// path — such patterns are not memoized and are bounded by [`MAX_STEPS`] instead; a
    /// checked condition that reads only rows (`NEXT`) answers the same on every path.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        eligible: &[u64],
        start: usize,
        at_partition_start: bool,
        finished: bool,
        checked: u64,
        path_dependent: u64,
        check: &mut CheckFn<'_>,
    ) -> Result<Outcome> {
        let memoize = checked & path_dependent == 0;
        let mut failed: HashSet<(usize, usize)> = HashSet::default();
        let mut steps = 0usize;
        // Backtrack points: (instruction, row, length of the path then).
        let mut stack: Vec<(usize, usize, usize)> = vec![(0, start, 0)];
        let mut path = Path::default();
        // The length of the path every check since the previous one has kept.
        let mut stable = 0usize;
        while let Some((mut pc, mut row, len)) = stack.pop() {
            path.vars.truncate(len);
            path.hidden.truncate(len);
            stable = stable.min(len);
            loop {
                if memoize {
                    if !failed.insert((pc, row)) {
                        break;
                    }
                } else {
                    steps += 1;
                    if steps > MAX_STEPS {
                        return Err(BrookError::too_complex(format!(
                            "row pattern matching took more than {MAX_STEPS} steps at one \
                             row (DEFINE conditions that read the match so far are checked \
                             on every path tried, with no memory of failed ones); bound the \
                             pattern's quantifiers or the match with WITHIN"
                        )));
                    }
                }
                match self.ops[pc] {
                    Op::Var { var, hidden } => {
                        if row >= eligible.len() {
                            if finished {
                                break;
                            }
                            return Ok(Outcome::NeedMore(path));
                        }
                        if eligible[row] & (1 << var) == 0 {
                            break;
                        }
                        if checked & (1 << var) != 0 {
                            let ok = check(row, var, &path.vars, stable)?;
                            stable = path.vars.len();
                            if !ok {
                                break;
                            }
                        }
                        path.vars.push(var);
                        path.hidden.push(hidden);
                        row += 1;
                        pc += 1;
                    }
                    Op::Split(a, b) => {
                        stack.push((b, row, path.vars.len()));
                        pc = a;
                    }
                    Op::Jump(a) => pc = a,
                    Op::Start => {
                        if row != start || !at_partition_start {
                            break;
                        }
                        pc += 1;
                    }
                    Op::End => {
                        if row < eligible.len() {
                            break;
                        }
                        if !finished {
                            return Ok(Outcome::NeedMore(path));
                        }
                        pc += 1;
                    }
                    Op::Match => return Ok(Outcome::Match(path)),
                }
            }
        }
        Ok(Outcome::NoMatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: usize = 0;
    const B: usize = 1;

    fn go(p: &Program, e: &[u64], start: usize, first: bool, fin: bool) -> Result<Outcome> {
        p.run(e, start, first, fin, 0, 0, &mut |_, _, _, _| Ok(true))
    }

    fn m(vars: Vec<usize>) -> Outcome {
        Outcome::Match(Path {
            hidden: vec![false; vars.len()],
            vars,
        })
    }

    fn rows(s: &str) -> Vec<u64> {
        // Each character a row: 'a' can be A, 'b' can be B, 'x' both, '.' neither.
        s.chars()
            .map(|c| match c {
                'a' => 1,
                'b' => 2,
                'x' => 3,
                _ => 0,
            })
            .collect()
    }

    fn plus(p: Pattern) -> Pattern {
        Pattern::Repeat {
            inner: Box::new(p),
            min: 1,
            max: None,
            greedy: true,
        }
    }

    #[test]
    fn greedy_quantifiers_take_the_longest_run_and_backtrack_for_the_rest() {
        // A+ B over "aab": A A B. (A|B)+ B over "xxb": greedy, then gives back one row.
        let p = Program::compile(&Pattern::Concat(vec![
            plus(Pattern::Var(A)),
            Pattern::Var(B),
        ]))
        .unwrap();
        assert_eq!(
            go(&p, &rows("aab"), 0, true, true).unwrap(),
            m(vec![A, A, B])
        );
        let any = Pattern::Alt(vec![Pattern::Var(A), Pattern::Var(B)]);
        let p = Program::compile(&Pattern::Concat(vec![plus(any), Pattern::Var(B)])).unwrap();
        assert_eq!(
            go(&p, &rows("xxb"), 0, true, true).unwrap(),
            m(vec![A, A, B])
        );
    }

    #[test]
    fn reluctant_quantifiers_take_the_shortest_run() {
        // A B+? X over "abbbx"-like rows: B+? stops at the first row that can be the next
        // part; greedy B+ runs to the last.
        let x = 2;
        let rows: Vec<u64> = vec![1, 2 | 4, 2 | 4, 2 | 4];
        let pattern = |greedy| {
            Pattern::Concat(vec![
                Pattern::Var(A),
                Pattern::Repeat {
                    inner: Box::new(Pattern::Var(B)),
                    min: 1,
                    max: None,
                    greedy,
                },
                Pattern::Var(x),
            ])
        };
        let reluctant = Program::compile(&pattern(false)).unwrap();
        assert_eq!(
            go(&reluctant, &rows, 0, true, false).unwrap(),
            m(vec![A, B, x])
        );
        let greedy = Program::compile(&pattern(true)).unwrap();
        assert_eq!(
            go(&greedy, &rows, 0, true, true).unwrap(),
            m(vec![A, B, B, x])
        );
        // Bounded: B{1,3}? prefers one.
        let bounded = Pattern::Concat(vec![
            Pattern::Repeat {
                inner: Box::new(Pattern::Var(B)),
                min: 1,
                max: Some(3),
                greedy: false,
            },
            Pattern::Var(x),
        ]);
        let p = Program::compile(&bounded).unwrap();
        assert_eq!(go(&p, &rows, 1, false, false).unwrap(), m(vec![B, x]));
    }

    #[test]
    fn an_undecided_match_waits_for_more_rows() {
        let p = Program::compile(&plus(Pattern::Var(A))).unwrap();
        // The rows so far, as the preferred way they may still match (a longer run).
        assert_eq!(
            go(&p, &rows("aa"), 0, true, false).unwrap(),
            Outcome::NeedMore(Path {
                vars: vec![A, A],
                hidden: vec![false, false],
            })
        );
        assert_eq!(go(&p, &rows("aa."), 0, true, false).unwrap(), m(vec![A, A]));
        // The preferred alternative the rows rule out is not the path shown.
        let alt = Program::compile(&Pattern::Alt(vec![
            Pattern::Concat(vec![Pattern::Var(A), Pattern::Var(A), Pattern::Var(A)]),
            Pattern::Concat(vec![Pattern::Var(A), Pattern::Var(B), Pattern::Var(B)]),
        ]))
        .unwrap();
        assert_eq!(
            go(&alt, &rows("ab"), 0, true, false).unwrap(),
            Outcome::NeedMore(Path {
                vars: vec![A, B],
                hidden: vec![false, false],
            })
        );
        assert_eq!(
            go(&p, &rows(".a"), 0, true, false).unwrap(),
            Outcome::NoMatch
        );
    }

    #[test]
    fn bounded_quantifiers_and_anchors() {
        let p = Program::compile(&Pattern::Concat(vec![
            Pattern::Start,
            Pattern::Repeat {
                inner: Box::new(Pattern::Var(A)),
                min: 2,
                max: Some(3),
                greedy: true,
            },
        ]))
        .unwrap();
        assert_eq!(
            go(&p, &rows("aaaa"), 0, true, true).unwrap(),
            m(vec![A, A, A])
        );
        assert_eq!(
            go(&p, &rows("aaaa"), 1, false, true).unwrap(),
            Outcome::NoMatch
        );
        assert_eq!(
            go(&p, &rows("a."), 0, true, true).unwrap(),
            Outcome::NoMatch
        );
    }

    #[test]
    fn nested_quantifiers_stay_linear() {
        // (A+)+ B over 5,000 rows of A with no B: exponential for naive backtracking.
        let p = Program::compile(&Pattern::Concat(vec![
            plus(plus(Pattern::Var(A))),
            Pattern::Var(B),
        ]))
        .unwrap();
        let many = rows(&"a".repeat(5000));
        assert_eq!(go(&p, &many, 0, true, true).unwrap(), Outcome::NoMatch);
    }

    #[test]
    fn excluded_rows_are_in_the_match_but_hidden() {
        // A {- B+ -} A over "abba".
        let p = Program::compile(&Pattern::Concat(vec![
            Pattern::Var(A),
            Pattern::Exclude(Box::new(plus(Pattern::Var(B)))),
            Pattern::Var(A),
        ]))
        .unwrap();
        assert_eq!(
            go(&p, &rows("abba"), 0, true, true).unwrap(),
            Outcome::Match(Path {
                vars: vec![A, B, B, A],
                hidden: vec![false, true, true, false],
            })
        );
    }

    #[test]
    fn checked_variables_see_the_path_so_far() {
        // A B+ where a row can be B only while the path has fewer than two B rows: the
        // check, not the row's bits, ends the run (and no failed state is remembered).
        let p = Program::compile(&Pattern::Concat(vec![
            Pattern::Var(A),
            plus(Pattern::Var(B)),
        ]))
        .unwrap();
        let mut check = |_row: usize, v: usize, path: &[usize], _stable: usize| {
            Ok(v != B || path.iter().filter(|x| **x == B).count() < 2)
        };
        assert_eq!(
            p.run(&rows("abbbb"), 0, true, true, 1 << B, 1 << B, &mut check)
                .unwrap(),
            m(vec![A, B, B])
        );
        // Nested quantifiers with a check are bounded by steps, not left to run.
        let nested = Program::compile(&Pattern::Concat(vec![
            plus(plus(plus(Pattern::Var(A)))),
            Pattern::Var(B),
        ]))
        .unwrap();
        let e = nested
            .run(
                &rows(&"a".repeat(60)),
                0,
                true,
                true,
                1 << A,
                1 << A,
                &mut |_, _, _, _| Ok(true),
            )
            .unwrap_err();
        assert_eq!(e.sqlstate(), "54001");
    }

    #[test]
    fn a_check_is_told_how_much_of_the_path_it_saw_before() {
        // Backtracking through alternation and nested quantifiers, with checks that pass
        // and fail in no regular way: the first `stable` entries of every path a check sees
        // are those of the path the previous check saw.
        let p = Program::compile(&Pattern::Concat(vec![
            plus(Pattern::Alt(vec![
                Pattern::Var(A),
                Pattern::Concat(vec![Pattern::Var(A), Pattern::Var(B)]),
            ])),
            plus(Pattern::Var(B)),
            Pattern::Var(2),
        ]))
        .unwrap();
        let mut previous: Vec<usize> = Vec::new();
        let mut calls = 0usize;
        let mut check = |row: usize, v: usize, path: &[usize], stable: usize| {
            assert!(stable <= path.len() && stable <= previous.len());
            assert_eq!(path[..stable], previous[..stable], "call {calls}");
            previous = path.to_vec();
            calls += 1;
            Ok(!(row * 7 + v * 3 + calls).is_multiple_of(5))
        };
        let eligible = vec![0b11u64; 40]
            .into_iter()
            .chain([0b100])
            .collect::<Vec<_>>();
        let _ = p.run(&eligible, 0, true, true, 0b111, 0b111, &mut check);
        assert!(calls > 100, "{calls}");
    }

    #[test]
    fn bad_patterns_are_named() {
        let empty = Pattern::Repeat {
            inner: Box::new(Pattern::Repeat {
                inner: Box::new(Pattern::Var(A)),
                min: 0,
                max: Some(1),
                greedy: true,
            }),
            min: 0,
            max: None,
            greedy: true,
        };
        assert_eq!(empty.validate().unwrap_err().sqlstate(), "0A000");
        let reversed = Pattern::Repeat {
            inner: Box::new(Pattern::Var(A)),
            min: 3,
            max: Some(2),
            greedy: true,
        };
        assert_eq!(reversed.validate().unwrap_err().sqlstate(), "42601");
        let huge = Pattern::Repeat {
            inner: Box::new(Pattern::Var(A)),
            min: 0,
            max: Some(1_000_000),
            greedy: true,
        };
        assert_eq!(Program::compile(&huge).unwrap_err().sqlstate(), "54001");
    }

    #[test]
    fn unbounded_repetition_of_any_row_is_found() {
        let rep = |inner: Pattern, max: Option<u32>| Pattern::Repeat {
            inner: Box::new(inner),
            min: 1,
            max,
            greedy: true,
        };
        let only_a_defined = |v: usize| v == A;
        let cases = [
            (
                "a b+, b undefined",
                Pattern::Concat(vec![Pattern::Var(A), rep(Pattern::Var(B), None)]),
                true,
            ),
            ("a+, a defined", rep(Pattern::Var(A), None), false),
            ("b{1,3}, bounded", rep(Pattern::Var(B), Some(3)), false),
            (
                "(a | b)+",
                rep(Pattern::Alt(vec![Pattern::Var(A), Pattern::Var(B)]), None),
                true,
            ),
            (
                "(a b)+",
                rep(
                    Pattern::Concat(vec![Pattern::Var(A), Pattern::Var(B)]),
                    None,
                ),
                false,
            ),
        ];
        for (name, pattern, want) in cases {
            assert_eq!(pattern.repeats_any_row(&only_a_defined), want, "{name}");
        }
    }
}
