//! A push-constant member named like the generated padding (`_pad0`) does not clash with it.
#![deny(warnings, missing_docs, unsafe_op_in_unsafe_fn, unused)]

vkprism::compute_shader! {
    /// Padding after `_pad0` (a vec4 aligns to 16).
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer b { vec4 d[]; };
layout (push_constant) uniform parameter { int _pad0; vec4 v; } p;
void main() { d[p._pad0] = p.v; }
"#,
    variants: [fp32],
}

fn main() {
    let push = k::PushConstants::new(1, [0.0; 4]);
    assert_eq!(push._pad0, 1);
    assert_eq!(bytemuck::bytes_of(&push).len(), 32);
}
