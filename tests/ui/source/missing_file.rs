vkprism::compute_shader! {
    pub mod k,
    path: "no/such/kernel.comp",
}

fn main() {}
