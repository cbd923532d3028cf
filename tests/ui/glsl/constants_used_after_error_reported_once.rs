// One GLSL mistake (a typo), one error: the push constants and specialization constants the
// failed kernel declares keep their fields (read from its text), so the calling code below, which
// names them, adds no error of its own.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (constant_id = 0) const int M = 1;
layout (constant_id = 1) const float alpha = 1.0;
layout (constant_id = 2) const bool fast = false;
layout (binding = 0) readonly buffer a_blob { float a_data[]; };
layout (binding = 1) writeonly buffer b_blob { float b_data[]; };
layout (push_constant) uniform parameter { int n; float scale; uvec2 shape; float taps[4]; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= uint(p.n)) return;
    b_data[i] = a_data[i] * p.scale * alpha * float(M) + flaot(p.taps[0]);
}
"#,
}

#[allow(dead_code)]
fn run(list: &mut vkprism::CommandList, ctx: &vkprism::Context, a: &vkprism::Tensor, b: &vkprism::Tensor) {
    let kernel = ctx.load::<k::Kernel>().unwrap();
    let constants = k::SpecConstants { M: 4, alpha: 0.5, fast: true };
    let pipeline = kernel.pipeline(&constants, None).unwrap();
    let push = k::PushConstants { n: 64, scale: 2.0, shape: [8, 8], taps: [1.0; 4] };
    let other = k::PushConstants::new(1, 1.0, [1, 1], [0.0; 4]);
    assert_ne!(push, other);
    let defaults = k::PushConstants { n: 3, ..Default::default() };
    list.dispatch(&pipeline, &k::BufferBindings { a_blob: a, b_blob: b }, &defaults, [64, 1, 1])
        .unwrap();
}

fn main() {}
