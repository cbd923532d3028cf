vkprism::compute_shader! {
    pub mod kernels,
    shaders: {
        good: { src: "#version 450\nvoid main() {}" },
        empty: { variants: [fp32] },
    },
}

fn main() {
    // The good kernel is there; the failed one has its stubs.
    let _ = kernels::good::VARIANT_NAMES;
    let _ = kernels::empty::VARIANT_NAMES;
}
