// `optimize` is not a key: the shipped SPIR-V is glslang's, and the message says so.
vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    optimize: true,
}

fn main() {}
