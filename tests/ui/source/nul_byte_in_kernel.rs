vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}\0\n",
}

fn main() {}
