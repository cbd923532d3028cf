vkprism::compute_shader! {
    pub mod k,
    src: kernel_text,
}

fn main() {}
