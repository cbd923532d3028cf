//! Error collection (after serde_derive's `internals/ctxt.rs`): every phase records its errors
//! here with a span, and the entry point reports them all together.

use proc_macro2::{Span, TokenStream};
use std::cell::RefCell;
use std::fmt::Display;

#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error at `span`.
    pub fn error(&self, span: Span, msg: impl Display) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    pub fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All recorded errors as `compile_error!` invocations, in the order recorded.
    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .into_inner()
            .into_iter()
            .map(|e| e.to_compile_error())
            .collect()
    }

    /// The recorded messages (for unit tests).
    pub fn messages(&self) -> Vec<String> {
        self.errors.borrow().iter().map(|e| e.to_string()).collect()
    }
}
