//! Error collection (after serde_derive's `internals/ctxt.rs`): every phase records its errors
//! here with a span, and the driver takes them all at once with [`Ctxt::check`], so one run
//! reports every mistake it can find rather than the first.

use proc_macro2::Span;
use std::cell::RefCell;
use std::fmt::Display;

/// The errors recorded so far. Phases take `&Ctxt` and record; a phase that could not produce
/// its result returns `None` as well, so no phase ever needs to ask whether errors exist.
///
/// Dropping a `Ctxt` without calling [`Ctxt::check`] panics (as serde's does): errors must not
/// be lost silently.
pub struct Ctxt {
    /// `None` once `check` has taken them.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Default for Ctxt {
    fn default() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }
}

impl Ctxt {
    /// A context with no errors.
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error at `span`.
    pub fn error(&self, span: Span, msg: impl Display) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt::error after Ctxt::check")
            .push(syn::Error::new(span, msg));
    }

    /// Whether an error was recorded.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Every recorded error combined into one (in the order recorded; iterate the error or call
    /// `to_compile_error` to get them all), or `Ok` when none was recorded.
    pub fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            combined.combine(e);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("a Ctxt was dropped without Ctxt::check: its errors would be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ctxt;
    use proc_macro2::Span;

    #[test]
    fn check_combines_every_error_in_order() {
        assert!(Ctxt::new().check().is_ok());
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "first");
        cx.error(Span::call_site(), "second");
        let messages: Vec<String> = cx
            .check()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["first", "second"]);
    }

    #[test]
    #[should_panic(expected = "without Ctxt::check")]
    fn dropping_unchecked_errors_panics() {
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "lost");
    }
}
