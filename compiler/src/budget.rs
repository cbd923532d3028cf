//! Phase 3a, the macro-expansion budget: what the kernel's macros expand to, measured before any
//! preprocessor runs, so that a kernel whose expansion would run away (`#define M1 (M0+M0)`,
//! `#define M2 (M1+M1)`, … 40 levels: 2^40 tokens from 936 bytes) is refused at the use, naming
//! the macro, and never reaches glslang (whose preprocessor is C++ that can't be interrupted).
//!
//! The text measured is the kernel with its includes spliced (the same `includes::expand` the
//! compile reads) after the `define` key's macros. Each macro gets a size *form* once per
//! definition: an object-like macro's expanded size in bytes (each token counted with one
//! separator), a function-like macro's `c + Σ kᵢ·argᵢ` (its body's fixed part, and how many times
//! each parameter appears once the body's own macro calls are expanded), so measuring is linear in
//! the text and the definitions, never in the expansion. The sum of the expansions of every use
//! (in code and in `#if` / `#elif`) must stay under [`EXPANSION_BUDGET`]; the use that crosses it
//! is the error. A `#line` directive that is not a plain number (and file name) is refused here
//! too: glslang would write a newline for each line it skips after one. The measure is conservative where the preprocessor is subtle: every branch of an
//! `#if` counts, `#`/`##` count as their operands, a macro that names itself is one token.

use crate::ctxt::Ctxt;
use crate::source::Source;
use std::collections::{HashMap, HashSet};

/// The most bytes of macro expansion a kernel may produce, all uses together (each token counted
/// with one separator). Far above what the repository's kernels expand to; measured on a 2-core
/// machine (debug build), a kernel expanding to this much takes glslang about 1 s per variant
/// (preprocessing and compiling), 4 MiB 2.6 s.
pub const EXPANSION_BUDGET: u64 = 1 << 20;

/// How deep macro calls may nest, in their arguments (`F(F(F(…)))`) or in their definitions
/// (`A1` is `A0`, `A2` is `A1`, …), which the measure follows by recursion.
const MAX_CALL_DEPTH: usize = 200;

/// Checks the expansion of `source`'s macros against [`EXPANSION_BUDGET`]; `false` (with the
/// error in `cx`) when it is over.
pub fn check(cx: &Ctxt, source: &Source) -> bool {
    let include_budget = crate::includes::IncludeBudget::default();
    // An include that can't be read is the compile's error; the main text is measured alone.
    let text = crate::includes::expand(
        &include_budget,
        &source.meta,
        &source.text,
        &source.meta.name,
        0,
    )
    .unwrap_or_else(|_| source.text.clone());
    let defines = source.meta.options.define_lines();
    match measure(&defines, &text, EXPANSION_BUDGET) {
        Ok(_) => true,
        Err(over) => {
            let at = match &over.at {
                Place::Define => "the `define` key".to_string(),
                Place::Main(line) => source.locate(*line),
                // Back in the main text after an include.
                Place::File(file, line) if *file == source.meta.name.replace('"', "'") => {
                    source.locate(*line)
                }
                Place::File(file, line) => format!("{file}:{line}"),
            };
            cx.error(source.span, format!("{at}: {}", over.message));
            false
        }
    }
}

/// Where a use is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// In the `define` key's macros.
    Define,
    /// Line of the main text.
    Main(u32),
    /// `file:line` of an included file.
    File(String, u32),
}

/// Why a text is over the budget, and where.
#[derive(Debug)]
pub struct Over {
    /// The use that crossed the budget.
    pub at: Place,
    /// What to tell the user.
    pub message: String,
}

/// One preprocessing token, as far as sizes go.
#[derive(Clone, Debug)]
struct Tok<'a> {
    text: &'a str,
    ident: bool,
    /// Index of the logical line it is on (for its place).
    line: usize,
}

/// A macro: parameters (`None` for object-like) and body.
struct Macro<'a> {
    params: Option<Vec<&'a str>>,
    body: Vec<Tok<'a>>,
}

/// `c + Σ k[i]·arg[i]`, saturating.
#[derive(Clone, Debug)]
struct Affine {
    c: u64,
    k: Vec<u64>,
}

impl Affine {
    fn zero(n: usize) -> Affine {
        Affine {
            c: 0,
            k: vec![0; n],
        }
    }
    /// `self += m · other`.
    fn add_scaled(&mut self, m: u64, other: &Affine) {
        self.c = self.c.saturating_add(m.saturating_mul(other.c));
        for (a, b) in self.k.iter_mut().zip(&other.k) {
            *a = a.saturating_add(m.saturating_mul(*b));
        }
    }
}

struct Measure<'a> {
    macros: HashMap<&'a str, Macro<'a>>,
    forms: HashMap<&'a str, Affine>,
    /// Names looked up while not defined, since the forms were last cleared: defining one
    /// changes forms already computed.
    missed: HashSet<&'a str>,
    active: Vec<&'a str>,
    depth: usize,
    too_deep: bool,
}

/// Measures the expansion of `text` (after the `define` lines `defines`); `Ok(total bytes)` or
/// where it crossed `budget`.
pub fn measure(defines: &str, text: &str, budget: u64) -> Result<u64, Over> {
    let mut m = Measure {
        macros: HashMap::new(),
        forms: HashMap::new(),
        missed: HashSet::new(),
        active: Vec::new(),
        depth: 0,
        too_deep: false,
    };
    let mut total = 0u64;
    let texts = [(true, logical_lines(defines)), (false, logical_lines(text))];
    for (origin, lines) in &texts {
        let places = places(lines, *origin);
        // Code between directives, measured as one run (a call's arguments may span lines).
        let mut run: Vec<Tok<'_>> = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            let toks = tokens(&line.text, index);
            let directive = toks.first().is_some_and(|t| t.text == "#");
            if !directive {
                run.extend(toks);
                continue;
            }
            total = m.uses(&std::mem::take(&mut run), total, budget, &places)?;
            let name = toks.get(1).map_or("", |t| t.text);
            match name {
                "define" => {
                    if let Some(name) = m.define(&toks[2..]) {
                        return Err(Over {
                            at: places[index].clone(),
                            message: format!(
                                "`{name}` is defined again with another number of parameters (or as the other kind of macro) without an `#undef` between: the expansion budget, which counts every `#if` branch, can't bound what a use of `{name}` expands to; `#undef {name}` first, or give each definition its own name"
                            ),
                        });
                    }
                }
                "line" if !crate::toolchain::line_directives_plain(&line.text) => {
                    let shown: String = line.text.trim().chars().take(80).collect();
                    return Err(Over {
                        at: places[index].clone(),
                        message: format!(
                            "`{shown}`: vkprism takes `#line` with a number (at most 4294967295) and optionally a \"file\" name only: glslang's preprocessor keeps the line count of a `#line` it can't evaluate by writing one newline per line skipped, billions of them; the kernel is refused before the GLSL compiler sees it"
                        ),
                    });
                }
                "undef" => {
                    if let Some(t) = toks.get(2) {
                        m.macros.remove(t.text);
                        m.forms.clear();
                    }
                }
                "if" | "elif" => {
                    // `defined X` / `defined(X)` names a macro without expanding it.
                    let mut kept = Vec::new();
                    let mut k = 2;
                    while k < toks.len() {
                        if toks[k].text == "defined" {
                            k += 1;
                            if toks.get(k).is_some_and(|t| t.text == "(") {
                                k += 3;
                            } else {
                                k += 1;
                            }
                            continue;
                        }
                        kept.push(toks[k].clone());
                        k += 1;
                    }
                    total = m.uses(&kept, total, budget, &places)?;
                }
                _ => {}
            }
        }
        total = m.uses(&run, total, budget, &places)?;
    }
    Ok(total)
}

impl<'a> Measure<'a> {
    /// Records `#define` with `toks` after the `define`; the macro's name when it is already
    /// defined with another number of parameters (or as the other kind), which no single
    /// measure bounds.
    fn define(&mut self, toks: &[Tok<'a>]) -> Option<&'a str> {
        let name = toks.first().filter(|t| t.ident)?;
        // A function-like macro's `(` follows its name without a space.
        let (params, body) = match toks.get(1) {
            Some(t) if t.text == "(" && adjacent(name, t) => {
                let close = toks
                    .iter()
                    .position(|t| t.text == ")")
                    .unwrap_or(toks.len());
                let params = toks[2..close.max(2)]
                    .iter()
                    .filter(|t| t.ident || t.text == "...")
                    .map(|t| t.text)
                    .collect();
                (Some(params), toks.get(close + 1..).unwrap_or(&[]).to_vec())
            }
            _ => (None, toks[1..].to_vec()),
        };
        if let Some(old) = self.macros.get_mut(name.text) {
            let arity = |p: &Option<Vec<&'a str>>| p.as_ref().map(Vec::len);
            if arity(&old.params) != arity(&params) {
                return Some(name.text);
            }
            // Another replacement of the same shape (`#if`/`#else` branches, which this count
            // doesn't evaluate, or a second define glslang may refuse and so keep the first):
            // measured as both bodies one after the other, at least the larger expansion.
            let texts = |b: &[Tok<'a>]| b.iter().map(|t| t.text).collect::<Vec<_>>();
            if texts(&old.body) != texts(&body) {
                let names = params.unwrap_or_default();
                let old_names = old.params.clone().unwrap_or_default();
                old.body.extend(body.into_iter().map(|mut t| {
                    if let Some(i) = names.iter().position(|n| *n == t.text) {
                        t.text = old_names[i];
                    }
                    t
                }));
                self.forms.clear();
                self.missed.clear();
            }
            return None;
        }
        if self.missed.contains(name.text) {
            self.forms.clear();
            self.missed.clear();
        }
        self.macros.insert(name.text, Macro { params, body });
        None
    }

    /// Adds the expansions of the macro uses in `toks` to `total`; the use that crosses
    /// `budget` is the error.
    fn uses(
        &mut self,
        toks: &[Tok<'a>],
        mut total: u64,
        budget: u64,
        places: &[Place],
    ) -> Result<u64, Over> {
        if toks.is_empty() || self.macros.is_empty() {
            return Ok(total);
        }
        let close = matching(toks);
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            let start = i;
            let size = self.token(toks, &close, &mut i, &[]);
            if self.macros.contains_key(t.text) {
                total = total.saturating_add(size.c);
                if self.too_deep {
                    return Err(Over {
                        at: places[t.line].clone(),
                        message: format!(
                            "macro `{}` here nests more than {MAX_CALL_DEPTH} macro calls deep; vkprism measures a kernel's macro expansion before compiling it and refuses deeper nesting",
                            t.text
                        ),
                    });
                }
                if total > budget {
                    let what = if size.c > budget {
                        format!(
                            "this use of macro `{}` expands to {}",
                            t.text,
                            bytes(size.c)
                        )
                    } else {
                        format!(
                            "with this use of macro `{}` ({}), the kernel's macros expand to {}",
                            t.text,
                            bytes(size.c),
                            bytes(total)
                        )
                    };
                    return Err(Over {
                        at: places[toks[start].line].clone(),
                        message: format!(
                            "{what}, over the budget of {} of expanded text per kernel (macros that use another macro several times grow exponentially: `#define M2 (M1+M1)`); the kernel is refused before the GLSL compiler sees it",
                            bytes(budget)
                        ),
                    });
                }
            }
        }
        Ok(total)
    }

    /// The size of the token at `*i` of `toks` (a macro use with its arguments, a parameter of
    /// the macro being measured, or a plain token), over the parameters `params`; moves `*i`
    /// past it.
    fn token(
        &mut self,
        toks: &[Tok<'a>],
        close: &[usize],
        i: &mut usize,
        params: &[&'a str],
    ) -> Affine {
        let t = &toks[*i];
        *i += 1;
        let mut out = Affine::zero(params.len());
        if t.ident {
            if let Some(p) = params.iter().position(|p| *p == t.text) {
                out.k[p] = 1;
                return out;
            }
            if self.active.len() >= MAX_CALL_DEPTH {
                self.too_deep = true;
            } else if !self.active.contains(&t.text) {
                match self.macros.get(t.text).map(|m| m.params.is_some()) {
                    None => {
                        self.missed.insert(t.text);
                    }
                    Some(false) => {
                        let form = self.form(t.text);
                        out.c = form.c;
                        return out;
                    }
                    Some(true) if toks.get(*i).is_some_and(|n| n.text == "(") => {
                        let end = close[*i];
                        if end < toks.len() {
                            let args = self.arguments(toks, close, *i + 1, end, params);
                            let ranges = argument_ranges(close, *i + 1, end, toks);
                            *i = end + 1;
                            let form = self.form(t.text);
                            out.c = form.c;
                            for (k, arg) in form.k.iter().zip(&args) {
                                out.add_scaled(*k, arg);
                            }
                            let pasted = self.pasted(t.text, toks, &ranges, params);
                            out.c = out.c.saturating_add(pasted);
                            return out;
                        }
                    }
                    Some(true) => {}
                }
            }
        }
        out.c = t.text.len() as u64 + 1;
        out
    }

    /// The sizes of the arguments between `from` and `end` (the call's `)`), split at top-level
    /// commas.
    fn arguments(
        &mut self,
        toks: &[Tok<'a>],
        close: &[usize],
        from: usize,
        end: usize,
        params: &[&'a str],
    ) -> Vec<Affine> {
        let mut args = vec![Affine::zero(params.len())];
        if self.depth >= MAX_CALL_DEPTH {
            self.too_deep = true;
            return args;
        }
        self.depth += 1;
        let mut j = from;
        while j < end {
            match toks[j].text {
                "," => {
                    args.push(Affine::zero(params.len()));
                    j += 1;
                }
                "(" => {
                    // Parentheses inside an argument: measured, never split at.
                    let inner_end = close[j].min(end);
                    let last = args.last_mut().expect("one argument at least");
                    last.c = last.c.saturating_add(2);
                    j += 1;
                    while j < inner_end {
                        let size = self.token(toks, close, &mut j, params);
                        let last = args.last_mut().expect("one argument at least");
                        last.add_scaled(1, &size);
                    }
                    j = inner_end + 1;
                }
                _ => {
                    let size = self.token(toks, close, &mut j, params);
                    let last = args.last_mut().expect("one argument at least");
                    last.add_scaled(1, &size);
                }
            }
        }
        self.depth -= 1;
        args
    }

    /// The size form of macro `name` (defined, not active), computed once per definition.
    fn form(&mut self, name: &'a str) -> Affine {
        if let Some(f) = self.forms.get(name) {
            return f.clone();
        }
        let Some(m) = self.macros.get(name) else {
            return Affine {
                c: name.len() as u64 + 1,
                k: Vec::new(),
            };
        };
        let params = m.params.clone().unwrap_or_default();
        let body = m.body.clone();
        let close = matching(&body);
        self.active.push(name);
        let mut form = Affine::zero(params.len());
        let mut i = 0;
        while i < body.len() {
            let size = self.token(&body, &close, &mut i, &params);
            form.add_scaled(1, &size);
        }
        // Pastes of the body's own tokens (`M ## 3`); those of parameters count at each call.
        let pasted = self.pasted(name, &[], &[], &[]);
        form.c = form.c.saturating_add(pasted);
        self.active.pop();
        self.forms.insert(name, form.clone());
        form
    }

    /// What the pastes (`a ## b`) of macro `name`'s body make, called with the arguments
    /// `ranges` of `toks` (none for its own measure): the preprocessor expands a pasted token
    /// again when it names a macro. An operand that is a parameter takes its argument's last
    /// (left of `##`) or first (right) token; one whose text is unknown here (an argument that
    /// is itself a parameter of the macro being measured) makes nothing counted.
    fn pasted(
        &mut self,
        name: &'a str,
        toks: &[Tok<'a>],
        ranges: &[(usize, usize)],
        outer: &[&'a str],
    ) -> u64 {
        let Some(m) = self.macros.get(name) else {
            return 0;
        };
        let params = m.params.clone().unwrap_or_default();
        let body = &m.body;
        let mut names: Vec<String> = Vec::new();
        for j in 1..body.len().saturating_sub(2) {
            if body[j].text != "#" || body[j + 1].text != "#" {
                continue;
            }
            let operand = |t: &Tok<'a>, last: bool| -> Option<&'a str> {
                match params.iter().position(|p| *p == t.text) {
                    None => Some(t.text),
                    Some(p) => {
                        let (from, to) = *ranges.get(p)?;
                        let k = if last { to.checked_sub(1)? } else { from };
                        let arg = toks.get(k).filter(|_| from < to)?;
                        (!outer.contains(&arg.text)).then_some(arg.text)
                    }
                }
            };
            if let (Some(l), Some(r)) = (operand(&body[j - 1], true), operand(&body[j + 2], false))
            {
                names.push(format!("{l}{r}"));
            }
        }
        let mut size = 0u64;
        for n in names {
            let Some((&key, _)) = self.macros.get_key_value(n.as_str()) else {
                continue;
            };
            if !self.active.contains(&key) && self.active.len() < MAX_CALL_DEPTH {
                size = size.saturating_add(self.form(key).c);
            } else if self.active.len() >= MAX_CALL_DEPTH {
                self.too_deep = true;
            }
        }
        size
    }
}

/// The token ranges of a call's arguments between `from` and `end` (its `)`), split at top-level
/// commas.
fn argument_ranges(
    close: &[usize],
    from: usize,
    end: usize,
    toks: &[Tok<'_>],
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = from;
    let mut j = from;
    while j < end {
        match toks[j].text {
            "," => {
                out.push((start, j));
                start = j + 1;
            }
            "(" => j = close[j].min(end),
            _ => {}
        }
        j += 1;
    }
    out.push((start, end));
    out
}

/// For each `(` of `toks`, the index of its `)` (`toks.len()` when unmatched); other entries 0.
fn matching(toks: &[Tok<'_>]) -> Vec<usize> {
    let mut close = vec![0; toks.len()];
    let mut open = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match t.text {
            "(" => {
                open.push(i);
                close[i] = toks.len();
            }
            ")" => {
                if let Some(o) = open.pop() {
                    close[o] = i;
                }
            }
            _ => {}
        }
    }
    close
}

/// Whether `paren` follows `name` with nothing between (a function-like macro's definition).
fn adjacent(name: &Tok<'_>, paren: &Tok<'_>) -> bool {
    // Both borrow the same line; their addresses say whether they touch.
    name.text.as_ptr() as usize + name.text.len() == paren.text.as_ptr() as usize
}

/// `n` bytes, for a message.
fn bytes(n: u64) -> String {
    match n {
        u64::MAX => "more than 16 EiB".to_string(),
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// A logical line: physical lines joined at backslash-newlines, comments replaced by a space.
pub(crate) struct Logical {
    pub(crate) text: String,
    /// The physical line (1-based) it starts on.
    first: u32,
}

/// `text`'s logical lines, comments removed (a block comment spanning lines ends the logical
/// line it started on and the rest continues on the line it ends, as a space).
pub(crate) fn logical_lines(text: &str) -> Vec<Logical> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut line = 1u32;
    let mut first = 1u32;
    let mut i = 0;
    let mut start = 0;
    let flush = |cur: &mut String, out: &mut Vec<Logical>, first: u32| {
        out.push(Logical {
            text: std::mem::take(cur),
            first,
        });
    };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => {
                cur.push_str(&text[start..i]);
                i += 2;
                start = i;
                line += 1;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') => {
                cur.push_str(&text[start..i]);
                i += 3;
                start = i;
                line += 1;
            }
            b'\n' => {
                cur.push_str(&text[start..i]);
                flush(&mut cur, &mut out, first);
                i += 1;
                start = i;
                line += 1;
                first = line;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                cur.push_str(&text[start..i]);
                // To the end of the line (a backslash-newline continues the comment).
                i += 2;
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                        i += 1;
                    }
                    i += 1;
                }
                start = i;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                cur.push_str(&text[start..i]);
                cur.push(' ');
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i = (i + 2).min(bytes.len());
                start = i;
            }
            _ => i += 1,
        }
    }
    cur.push_str(&text[start.min(text.len())..]);
    if !cur.is_empty() {
        flush(&mut cur, &mut out, first);
    }
    out
}

/// The place of each logical line: through `#line N` / `#line N "file"` (what the include
/// splicing writes), the main text's own lines otherwise. `define` is for the `define` key.
fn places(lines: &[Logical], define: bool) -> Vec<Place> {
    let mut out = Vec::with_capacity(lines.len());
    // (file, line number of physical line `base_phys`).
    let mut file: Option<String> = None;
    let mut offset: i64 = 0;
    for l in lines {
        let number = (l.first as i64 + offset).clamp(1, u32::MAX as i64) as u32;
        out.push(match (&file, define) {
            (_, true) => Place::Define,
            (None, false) => Place::Main(number),
            (Some(f), false) => Place::File(f.clone(), number),
        });
        let t = l.text.trim_start();
        if let Some(rest) = t.strip_prefix('#').map(str::trim_start) {
            if let Some(rest) = rest.strip_prefix("line") {
                let mut words = rest.split_whitespace();
                if let Some(n) = words.next().and_then(|n| n.parse::<i64>().ok()) {
                    // The next physical line is line `n`.
                    offset = n - (l.first as i64 + 1);
                    if let Some(f) = words.next() {
                        let f = f.trim_matches('"');
                        file = Some(f.to_string());
                    }
                }
            }
        }
    }
    out
}

/// The tokens of one logical line, as text.
pub(crate) fn line_tokens(line: &str) -> Vec<&str> {
    tokens(line, 0).into_iter().map(|t| t.text).collect()
}

/// The tokens of one logical line (the `index`-th): identifiers, numbers, one-character
/// punctuation.
fn tokens(line: &str, index: usize) -> Vec<Tok<'_>> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Tok {
                text: &line[s..i],
                ident: true,
                line: index,
            });
        } else if c.is_ascii_digit()
            || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let s = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_')
            {
                i += 1;
            }
            out.push(Tok {
                text: &line[s..i],
                ident: false,
                line: index,
            });
        } else {
            let s = i;
            i += 1;
            while i < bytes.len() && !line.is_char_boundary(i) {
                i += 1;
            }
            let text = if &line[s..i] == "." && line[i..].starts_with("..") {
                i += 2;
                &line[s..i]
            } else {
                &line[s..i]
            };
            out.push(Tok {
                text,
                ident: false,
                line: index,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> String {
        let mut t = String::from("#version 450\n#define M0 1\n");
        for i in 1..=n {
            t.push_str(&format!("#define M{i} (M{}+M{})\n", i - 1, i - 1));
        }
        t.push_str(&format!("void main() {{ float x = M{n}; }}\n"));
        t
    }

    #[test]
    fn doubling_macros_are_measured_exactly_and_refused() {
        // M0 = "1" (2 bytes); Mi = ( M + M ) = 3 punctuation (6 bytes) + 2 M(i-1).
        let ten = measure("", &chain(10), u64::MAX).unwrap();
        assert_eq!(ten, 2 * 1024 + 6 * 1023);
        let over = measure("", &chain(40), EXPANSION_BUDGET).unwrap_err();
        assert_eq!(over.at, Place::Main(43));
        assert!(over.message.contains("`M40`"), "{}", over.message);
    }

    #[test]
    fn function_like_macros_multiply_their_arguments() {
        let text = "#define D(x) x x\n#define Q(x) D(D(x))\nQ(Q(Q(Q(Q(Q(Q(Q(Q(Q(abc))))))))))\n";
        // Q repeats its argument 4 times: 4^10 copies of `abc` (4 bytes).
        assert_eq!(measure("", text, u64::MAX).unwrap(), 4 * 4u64.pow(10));
        let text =
            "#define D(x) x x\n#define Q(x) D(D(x))\n#define E(x) Q(Q(Q(Q(x))))\nE(E(E(E(a))))\n";
        assert!(measure("", text, EXPANSION_BUDGET).is_err());
    }

    #[test]
    fn a_macro_that_names_itself_is_one_token() {
        let text = "#define A A + A\n#define B(x) B(x) B(x)\nA B(1)\n";
        assert_eq!(measure("", text, u64::MAX).unwrap(), 6 + 16);
    }

    #[test]
    fn includes_and_the_define_key_are_placed() {
        let text = "#version 450\n#line 1 \"inc.glsl\"\n#define D(x) x x x x x x x x\n#line 3 \"main\"\n\nD(D(D(D(D(D(D(D(D(1)))))))))\n";
        let over = measure("", text, 1000).unwrap_err();
        assert_eq!(over.at, Place::File("main".into(), 4));
        let over = measure("#define A B B B B B B B B\n#define B C C C C C C C C\n#define C 1 2 3 4 5 6 7 8\n#define X A A\n", "", 1000);
        assert!(over.is_ok(), "definitions alone expand nothing");
        let over = measure(
            "#define B 1 2 3 4 5 6 7 8\n#define A B B B B B B B B\n",
            "A A A A A A A A\n",
            1000,
        );
        assert_eq!(over.unwrap_err().at, Place::Main(1));
    }

    #[test]
    fn a_macro_defined_again_is_measured_by_both_definitions() {
        // glslang refuses the second define (`#` without a parameter) and keeps the first, a
        // doubling macro: measured by the second alone, this ran glslang for minutes.
        let text = "#define D(x) x x\n#define D(y) y #foo\n#define Q(x) D(D(D(x)))\nQ(Q(Q(Q(Q(Q(Q(Q(Q(Q(1))))))))))\n";
        let over = measure("", text, 1 << 20).unwrap_err();
        assert!(over.message.contains("expands to"), "{}", over.message);
        // `#if` / `#else` alternatives of one shape are fine, and counted as the larger.
        let branches = "#if A\n#define X 1\n#else\n#define X 22\n#endif\nX\n";
        assert!(measure("", branches, 1 << 20).is_ok());
        let same = "#define D(x) x x\n#define D(x) x x\nD(1)\n";
        assert!(measure("", same, 1 << 20).is_ok());
        let kinds = "#define D(x) x x\n#define D 1\nD(1)\n";
        let over = measure("", kinds, 1 << 20).unwrap_err();
        assert!(
            over.message.contains("`D` is defined again"),
            "{}",
            over.message
        );
    }

    #[test]
    fn pasted_names_are_expanded_again() {
        let mut text = String::from("#define CAT(a, b) a ## b\n#define M0 (1)\n");
        for i in 1..=40 {
            text.push_str(&format!(
                "#define M{i} (CAT(M, {})+CAT(M, {}))\n",
                i - 1,
                i - 1
            ));
        }
        text.push_str("M40\n");
        let over = measure("", &text, EXPANSION_BUDGET).unwrap_err();
        assert_eq!(over.at, Place::Main(43));
        let own =
            "#define A 1 2 3 4 5 6 7 8 9\n#define AA 1\n#define B A ## A\n#define C x ## A\nB C\n";
        // Counted over: `B` as `A`, `#`, `#`, `A` and the pasted `AA` (a macro); `C` as `x`,
        // `#`, `#`, `A` (the pasted `xA` is no macro).
        assert_eq!(
            measure("", own, u64::MAX).unwrap(),
            (18 + 4 + 18 + 2) + (2 + 4 + 18)
        );
    }

    #[test]
    fn continued_lines_and_comments() {
        let text = "#define A 1 \\\n 2 3 /* 4\n 5 */ 6\nA // A\n";
        // `A` is `1 2 3 6`; the use is on line 4.
        assert_eq!(measure("", text, u64::MAX).unwrap(), 8);
        assert_eq!(measure("", text, 7).unwrap_err().at, Place::Main(4));
    }
}
