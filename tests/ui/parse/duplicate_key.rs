vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    src: "#version 450\nvoid main() {}",
}

fn main() {}
