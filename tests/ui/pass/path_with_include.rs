//! Generated code is documented and warning-free.
#![deny(warnings, missing_docs, unsafe_op_in_unsafe_fn, unused)]

vkprism::compute_shader! {
    /// A kernel read from a file, with an `#include` beside it.
    pub mod scale,
    path: "kernels/scale.comp",
}

fn main() {
    assert_eq!(scale::VARIANT_NAMES, ["fp32", "fp16p", "fp16pa", "fp16s", "fp16sa", "bf16p", "bf16s"]);
    let push = scale::PushConstants { n: 4, s: 0.5 };
    assert_eq!(bytemuck::bytes_of(&push).len(), 8);
    assert_eq!(scale::SpecConstants::default().n, 0);
}
