vkprism::compute_shader! {
    src: "#version 450\nvoid main() {}",
}

fn main() {}
