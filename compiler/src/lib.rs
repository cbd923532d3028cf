pub fn expand(t: proc_macro2::TokenStream) -> proc_macro2::TokenStream { t }
