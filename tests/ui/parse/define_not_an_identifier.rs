vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    define: [("2x", ""), ("a-b", "1")],
}

fn main() {}
