vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    workgroup: "64",
}

fn main() {}
