vkprism::compute_shader! {
    pub mod k,
    path: "/dev/zero",
}

fn main() {}
