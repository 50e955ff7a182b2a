//! Limits on CEL expressions written by anyone: an admin's ApprovalPolicy
//! rules, a requester's progression probes, a catalog's `olm.constraint`
//! rules. Whoever wrote it, an expression must neither crash nor hang the
//! process that reads it; every reader compiles through [`compile`] (or
//! [`compile_with`]) and checks [`BoundedProgram::cost`] before it runs.
//!
//! Why each limit, and why here rather than in the `cel` crate:
//!
//! - **Parsing recurses.** cel 0.15 parses with an ANTLR parser that
//!   descends about eight grammar rules per bracket (about 7 KiB of stack
//!   each, optimized): 34 nested parentheses overflowed a 256 KiB thread
//!   and 80 a 512 KiB one, and its own recursion limit (96) is past what
//!   a small stack survives (unoptimized, 12 overflowed 2 MiB). So the
//!   source is scanned *before* it is parsed: its size ([`MAX_LENGTH`]),
//!   how deep brackets nest ([`MAX_NESTING`], strings and comments aside)
//!   and how many operators it holds ([`MAX_OPERATORS`]: a chain such as
//!   `a + a + ...` or `a.b.c...` is parsed, and later evaluated, one frame
//!   per operator). `&&` and `||` are not counted: the parser balances
//!   their chains.
//! - **Evaluation recurses** over the expression tree (about 1.5 KiB a
//!   level, optimized), so the parsed tree's depth is bounded too
//!   ([`MAX_DEPTH`]), measured without recursing.
//! - **Evaluation iterates.** CEL has no loops, but its macros (`all`,
//!   `exists`, `exists_one`, `map`, `filter`) do. cel 0.15 has no runtime
//!   cost limit and no way to interrupt an evaluation, so the bound is
//!   static and sound instead: read from the parsed tree (macros by what
//!   they expand to, however they were spelled), it is a bound on the
//!   number of steps an evaluation takes over inputs whose longest list or
//!   map has a given length, and an expression past [`COST_LIMIT`] is not
//!   run. See [`BoundedProgram::cost`] for the argument.
//!
//! Kubernetes' CEL (cel-go) allows a recursion depth of 250 and far longer
//! expressions, but Go stacks grow; Rust threads' do not, so the limits
//! here are those a 2 MiB thread survives with room to spare, verified by
//! this module's tests on a thread of a quarter of that.

use cel::common::ast::{EntryExpr, Expr, operators};
use cel::{Env, IdedExpr, Program};
use serde_json::Value;

/// The most bytes an expression may have (an ApprovalPolicy rule's own
/// limit; callers may allow fewer).
pub const MAX_LENGTH: usize = 4096;
/// How deep `(`, `[` and `{` may nest.
pub const MAX_NESTING: usize = 32;
/// The most operators (`.`, `+`, `==`, `?`, `in`, ...) an expression may
/// hold, `&&` and `||` aside.
pub const MAX_OPERATORS: usize = 256;
/// How deep the parsed expression tree may be (macros expanded).
pub const MAX_DEPTH: usize = 100;
/// The largest cost an expression may have over its inputs (Kubernetes'
/// per-expression limit for CRD validation rules).
pub const COST_LIMIT: u128 = 1_000_000;

/// Why an expression is refused. The messages name the limit in words and
/// read after the field they are about (`spec.rules[0].cel: ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CelLimitError {
    /// Past [`MAX_LENGTH`] or the caller's own length limit.
    #[error("is {length} bytes; at most {limit}: shorten it or split it into several")]
    TooLong {
        /// Its length.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// Brackets nested past [`MAX_NESTING`].
    #[error("nests brackets {depth} deep; at most {MAX_NESTING} (the nesting limit): flatten it")]
    TooNested {
        /// How deep they nest.
        depth: usize,
    },
    /// More operators than [`MAX_OPERATORS`].
    #[error(
        "holds {count} operators; at most {MAX_OPERATORS} (the operator limit): shorten it or split it into several"
    )]
    TooManyOperators {
        /// How many it holds.
        count: usize,
    },
    /// A parsed tree deeper than [`MAX_DEPTH`].
    #[error(
        "is {depth} levels deep once parsed; at most {MAX_DEPTH} (the depth limit): flatten it"
    )]
    TooDeep {
        /// How deep it is.
        depth: usize,
    },
    /// Not CEL; the parser's first message.
    #[error("is not valid CEL: {0}")]
    Invalid(String),
    /// Past [`COST_LIMIT`] over the inputs at hand.
    #[error(
        "its cost over these inputs ({cost}) is past the limit of {COST_LIMIT} (the cost limit); nest fewer macros or iterate over fewer items"
    )]
    TooCostly {
        /// The bound on its cost.
        cost: u128,
    },
}

impl CelLimitError {
    /// Whether the expression is refused for a limit (rather than for not
    /// being CEL).
    pub fn is_limit(&self) -> bool {
        !matches!(self, Self::Invalid(_))
    }
}

/// A compiled expression known to be within every limit but the cost,
/// which depends on the inputs: see [`BoundedProgram::cost`].
#[derive(Debug)]
pub struct BoundedProgram {
    program: Program,
    shape: Shape,
}

/// What the cost bound reads from the tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Shape {
    /// Nodes in the tree.
    nodes: u128,
    /// `+` calls: each may join two lists into a longer one.
    additions: u128,
    /// Entries of the largest list or map literal.
    largest_literal: u128,
    /// The most loops any node runs inside, `map` and `filter` counting
    /// twice (see [`BoundedProgram::cost`]).
    loops: u32,
}

/// `source` checked against the limits, then compiled for the standard
/// environment (as [`Program::compile`]).
pub fn compile(source: &str) -> Result<BoundedProgram, CelLimitError> {
    check_source(source, MAX_LENGTH)?;
    bounded(Program::compile(source))
}

/// `source` checked against the limits, at most `max_length` bytes, then
/// compiled with `env`.
pub fn compile_with(
    env: &Env,
    source: &str,
    max_length: usize,
) -> Result<BoundedProgram, CelLimitError> {
    check_source(source, max_length)?;
    bounded(env.compile(source))
}

fn bounded(compiled: Result<Program, cel::ParseErrors>) -> Result<BoundedProgram, CelLimitError> {
    let program = compiled.map_err(|errors| {
        let first = match errors.errors.first() {
            Some(first) => format!(
                "at line {}, column {}: {}",
                first.pos.0,
                first.pos.1,
                one_line(&first.msg)
            ),
            None => one_line(&errors.to_string()),
        };
        CelLimitError::Invalid(first)
    })?;
    let shape = shape_of(program.expression())?;
    Ok(BoundedProgram { program, shape })
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The checks made on the text before the parser sees it: at most
/// `max_length` (and [`MAX_LENGTH`]) bytes, brackets nested at most
/// [`MAX_NESTING`] deep and at most [`MAX_OPERATORS`] operators, string
/// literals and `//` comments aside.
///
/// Strings are found as cel's lexer finds them (its grammar, `CEL.g4`):
/// a bracket this scan took for part of a string while the lexer read it
/// as code would reach the parser uncounted. So raw strings (`r'...'`,
/// `br'...'`) are told from an identifier ending in `r`, and a string
/// that does not end (a newline in a one-line string, a bad escape, the
/// end of the text) is skipped as the lexer skips it: up to and with the
/// character it failed at, the rest read as code.
pub fn check_source(source: &str, max_length: usize) -> Result<(), CelLimitError> {
    let limit = max_length.min(MAX_LENGTH);
    if source.len() > limit {
        return Err(CelLimitError::TooLong {
            length: source.len(),
            limit,
        });
    }
    let bytes = source.as_bytes();
    let (mut depth, mut deepest, mut operators) = (0usize, 0usize, 0usize);
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        match byte {
            _ if is_word(byte) => {
                let start = at;
                while at < bytes.len() && is_word(bytes[at]) {
                    at += 1;
                }
                let word = &bytes[start..at];
                if word == b"in" {
                    operators += 1;
                }
                if matches!(bytes.get(at), Some(b'\'' | b'"')) {
                    let after_dot = start > 0 && bytes[start - 1] == b'.';
                    let raw = raw_prefix(word, after_dot)
                        .then(|| string_end(bytes, at, true))
                        .and_then(Result::ok);
                    at = match raw {
                        Some(end) => end,
                        None => past_string(bytes, at),
                    };
                }
                continue;
            }
            b'\'' | b'"' => {
                at = past_string(bytes, at);
                continue;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
                continue;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                // `[` also indexes: one more frame, like an operator.
                operators += usize::from(byte == b'[');
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            // `!=`, `<=`, `>=` and `==` count once, at their first byte.
            b'=' if at > 0 && matches!(bytes[at - 1], b'=' | b'!' | b'<' | b'>') => {}
            b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'?' | b'!' => operators += 1,
            // A dot between digits is a number's (`1.5`).
            b'.' if !(at > 0
                && bytes[at - 1].is_ascii_digit()
                && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                operators += 1;
            }
            _ => {}
        }
        at += 1;
    }
    if deepest > MAX_NESTING {
        return Err(CelLimitError::TooNested { depth: deepest });
    }
    if operators > MAX_OPERATORS {
        return Err(CelLimitError::TooManyOperators { count: operators });
    }
    Ok(())
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether `word`, just before a quote, ends in the lexer's raw-string
/// prefix: `r`, `br` (any case) as a token of their own, not the end of an
/// identifier (`for'x'` is `for` then a string). A word opening with a
/// digit is a number first (`0x1f`, `1u`, `1e5`; `5` after a dot, a
/// fraction, takes no `u`), then whatever follows it.
fn raw_prefix(word: &[u8], after_dot: bool) -> bool {
    let rest = if word[0].is_ascii_digit() {
        let digits = |from: usize, hex: bool| {
            word[from..]
                .iter()
                .take_while(|b| {
                    if hex {
                        b.is_ascii_hexdigit()
                    } else {
                        b.is_ascii_digit()
                    }
                })
                .count()
        };
        let mut end;
        if !after_dot && word.starts_with(b"0x") && digits(2, true) > 0 {
            end = 2 + digits(2, true);
            end += usize::from(matches!(word.get(end), Some(b'u' | b'U')));
        } else {
            end = digits(0, false);
            if !after_dot && matches!(word.get(end), Some(b'u' | b'U')) {
                end += 1;
            } else if matches!(word.get(end), Some(b'e' | b'E')) && digits(end + 1, false) > 0 {
                end += 1 + digits(end + 1, false);
            }
        }
        &word[end..]
    } else {
        word
    };
    matches!(rest, b"r" | b"R" | b"br" | b"bR" | b"Br" | b"BR")
}

/// Where the lexer reads on after the quote at `at`: past the string it
/// opens, else (no string ends there) past the character it failed at.
fn past_string(bytes: &[u8], at: usize) -> usize {
    match string_end(bytes, at, false) {
        Ok(end) => end,
        Err(failed) => (failed + 1).min(bytes.len()),
    }
}

/// The end of the string opening with the quote at `at`, tripled or not
/// (the longer when both are strings, as the lexer prefers), escapes read
/// unless `raw`; else where reading it failed.
fn string_end(bytes: &[u8], at: usize, raw: bool) -> Result<usize, usize> {
    let quote = bytes[at];
    let tripled = bytes.get(at + 1) == Some(&quote) && bytes.get(at + 2) == Some(&quote);
    if tripled {
        let mut i = at + 3;
        let triple_end = loop {
            match bytes.get(i) {
                None => break None,
                Some(&byte)
                    if byte == quote
                        && bytes.get(i + 1) == Some(&quote)
                        && bytes.get(i + 2) == Some(&quote) =>
                {
                    break Some(i + 3);
                }
                Some(b'\\') if !raw => match escape_length(bytes, i) {
                    Ok(length) => i += length,
                    Err(_) => break None,
                },
                Some(_) => i += 1,
            }
        };
        if let Some(end) = triple_end {
            return Ok(end);
        }
    }
    let mut i = at + 1;
    loop {
        match bytes.get(i) {
            None => return Err(i),
            Some(&byte) if byte == quote => return Ok(i + 1),
            Some(b'\n' | b'\r') => return Err(i),
            Some(b'\\') if !raw => i += escape_length(bytes, i)?,
            Some(_) => i += 1,
        }
    }
}

/// The length of the escape at `at` (a backslash), or where it stops
/// being one.
fn escape_length(bytes: &[u8], at: usize) -> Result<usize, usize> {
    let within = |from: usize, count: usize, test: fn(&u8) -> bool| match (from..from + count)
        .find(|&i| !bytes.get(i).is_some_and(test))
    {
        Some(failed) => Err(failed),
        None => Ok(from + count - at),
    };
    match bytes.get(at + 1) {
        Some(
            b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`',
        ) => Ok(2),
        Some(b'0'..=b'3') => within(at + 2, 2, |b| (b'0'..=b'7').contains(b)),
        Some(b'x' | b'X') => within(at + 2, 2, u8::is_ascii_hexdigit),
        Some(b'u') => within(at + 2, 4, u8::is_ascii_hexdigit),
        Some(b'U') => within(at + 2, 8, u8::is_ascii_hexdigit),
        _ => Err(at + 1),
    }
}

/// The tree's shape, walked without recursion (its depth is not known to
/// be small yet); deeper than [`MAX_DEPTH`] is refused.
fn shape_of(root: &IdedExpr) -> Result<Shape, CelLimitError> {
    let mut shape = Shape::default();
    // (node, its depth, the loops it runs inside)
    let mut pending: Vec<(&IdedExpr, usize, u32)> = vec![(root, 1, 0)];
    while let Some((node, depth, loops)) = pending.pop() {
        if depth > MAX_DEPTH {
            return Err(CelLimitError::TooDeep { depth });
        }
        shape.nodes += 1;
        shape.loops = shape.loops.max(loops);
        let below = depth + 1;
        match &node.expr {
            Expr::Call(call) => {
                // `map` and `filter` append to their accumulator (`@result`,
                // a name no one can write) with `+`: what they make is no
                // longer than what they walk, so that `+` joins nothing.
                let accumulates = call.args.first().is_some_and(
                    |first| matches!(&first.expr, Expr::Ident(name) if name.starts_with('@')),
                );
                if call.func_name == operators::ADD && !accumulates {
                    shape.additions += 1;
                }
                if let Some(target) = &call.target {
                    pending.push((target, below, loops));
                }
                pending.extend(call.args.iter().map(|arg| (arg, below, loops)));
            }
            Expr::Comprehension(comprehension) => {
                // `map` and `filter` accumulate a list (their initial value
                // is `[]`) that each step copies: a loop of a loop's cost.
                let weight = if matches!(comprehension.accu_init.expr, Expr::List(_)) {
                    2
                } else {
                    1
                };
                pending.push((&comprehension.iter_range, below, loops));
                pending.push((&comprehension.accu_init, below, loops));
                pending.push((&comprehension.loop_cond, below, loops + weight));
                pending.push((&comprehension.loop_step, below, loops + weight));
                pending.push((&comprehension.result, below, loops));
            }
            Expr::List(list) => {
                shape.largest_literal = shape.largest_literal.max(list.elements.len() as u128);
                pending.extend(list.elements.iter().map(|element| (element, below, loops)));
            }
            Expr::Map(map) => {
                shape.largest_literal = shape.largest_literal.max(map.entries.len() as u128);
                push_entries(&mut pending, &map.entries, below, loops);
            }
            Expr::Struct(structure) => {
                push_entries(&mut pending, &structure.entries, below, loops);
            }
            Expr::Select(select) => pending.push((&select.operand, below, loops)),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    Ok(shape)
}

fn push_entries<'e>(
    pending: &mut Vec<(&'e IdedExpr, usize, u32)>,
    entries: &'e [cel::common::ast::IdedEntryExpr],
    depth: usize,
    loops: u32,
) {
    for entry in entries {
        match &entry.expr {
            EntryExpr::StructField(field) => pending.push((&field.value, depth, loops)),
            EntryExpr::MapEntry(entry) => {
                pending.push((&entry.key, depth, loops));
                pending.push((&entry.value, depth, loops));
            }
        }
    }
}

impl BoundedProgram {
    /// The compiled program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// A bound on the steps evaluating this expression takes over inputs
    /// whose longest list or map has `widest` entries.
    ///
    /// Why it is sound: a node is evaluated once per iteration of each
    /// loop it sits in, so at most `nodes × R^loops` times, where `R`
    /// bounds the length of any list or map a loop may walk. Such a value
    /// is an input's (at most `widest`), a literal's (at most the largest
    /// one), what `map` or `filter` made of another (no longer), or lists
    /// joined by `+`: one `+` node joins two values once per evaluation,
    /// and a joined value is built by at most all of the `+` nodes, so
    /// `R = max(widest, largest literal, 1) × (additions + 1)`. The
    /// standard functions make no longer lists than they are given. `map`
    /// and `filter` copy their growing result (at most `R` long) at every
    /// step, so they count as two loops. A step's own work is bounded by
    /// the size of the values it reads, which the caller's inputs bound.
    pub fn cost(&self, widest: usize) -> u128 {
        let Shape {
            nodes,
            additions,
            largest_literal,
            loops,
        } = self.shape;
        let range = (widest as u128)
            .max(largest_literal)
            .max(1)
            .saturating_mul(additions + 1);
        (0..loops).fold(nodes, |cost, _| cost.saturating_mul(range))
    }

    /// Refuses the expression when its [`cost`](Self::cost) over inputs
    /// whose longest list or map has `widest` entries is past
    /// [`COST_LIMIT`].
    pub fn within_cost(&self, widest: usize) -> Result<&Program, CelLimitError> {
        match self.cost(widest) {
            cost if cost > COST_LIMIT => Err(CelLimitError::TooCostly { cost }),
            _ => Ok(&self.program),
        }
    }
}

/// The number of entries of the longest list or map in `value`, walked
/// without recursion (the value may be as deep as its source allowed).
pub fn widest_collection(value: &Value) -> usize {
    let mut widest = 0;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => {
                widest = widest.max(items.len());
                pending.extend(items);
            }
            Value::Object(fields) => {
                widest = widest.max(fields.len());
                pending.extend(fields.values());
            }
            _ => {}
        }
    }
    widest
}

#[cfg(test)]
#[path = "cel_limits_tests.rs"]
mod tests;
