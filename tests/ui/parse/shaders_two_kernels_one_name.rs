vkprism::compute_shader! {
    pub mod kernels,
    shaders: {
        twice: { src: "#version 450\nvoid main() {}" },
        twice: { src: "#version 450\nvoid main() {}" },
    },
}

fn main() {}
