vkprism::compute_shader! {
    pub mod kernels,
    path: "k.comp",
    shaders: {
        k: { src: "#version 450\nvoid main() {}", crate: ::vkprism },
    },
}

fn main() {}
