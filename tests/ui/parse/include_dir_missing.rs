vkprism::compute_shader! {
    pub mod k,
    src: "#version 450\nvoid main() {}",
    include: ["no/such/dir"],
}

fn main() {}
