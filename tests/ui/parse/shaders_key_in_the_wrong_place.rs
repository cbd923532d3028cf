vkprism::compute_shader! {
    pub mod kernels,
    variants: [fp32],
    shaders: {
        k: { src: "#version 450\nvoid main() {}", crate: ::vkprism },
    },
}

fn main() {}
