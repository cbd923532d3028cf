vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    optimize: "yes",
}

fn main() {}
