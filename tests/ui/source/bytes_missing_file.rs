vkprism::compute_shader! {
    pub mod k,
    bytes: "no_such.spv",
}

fn main() {}
