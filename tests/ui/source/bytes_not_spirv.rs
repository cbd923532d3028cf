vkprism::compute_shader! {
    pub mod k,
    bytes: "bytes_not_spirv.rs",
}

fn main() {}
