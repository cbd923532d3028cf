//! Error collection (after serde_derive's `internals/ctxt.rs`): every phase records its errors
//! here with a span, and the driver takes them all at once with [`Ctxt::check`], so one run
//! reports every mistake it can find rather than the first.

use proc_macro2::Span;
use std::cell::RefCell;
use std::fmt::Display;

/// The errors recorded so far. Phases take `&Ctxt` and record; a phase that could not produce
/// its result returns `None` as well, so no phase ever needs to ask whether errors exist.
#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// A context with no errors.
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error at `span`.
    pub fn error(&self, span: Span, msg: impl Display) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Every recorded error combined into one (in the order recorded; iterate the error or call
    /// `to_compile_error` to get them all), or `Ok` when none was recorded.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            combined.combine(e);
        }
        Err(combined)
    }
}
