vkprism::compute_shader! {
    pub mod k,
    variants: [fp32],
}

fn main() {}
