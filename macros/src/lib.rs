use proc_macro::TokenStream;
#[proc_macro]
pub fn compute_shader(input: TokenStream) -> TokenStream {
    vkprism_compiler::expand(input.into()).into()
}
