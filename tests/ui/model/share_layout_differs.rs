// A kernel that shares a type whose layout differs: one error at the `share` entry, naming both
// kernels and the field.
vkprism::compute_shader! {
    pub mod ops,
    shaders: {
        a: { src: "#version 450\nlayout (constant_id = 0) const int tile = 4;\nlayout (binding = 0) buffer b { int d[]; };\nlayout (push_constant) uniform parameter { int n; float f; } p;\nvoid main() { d[0] = tile + p.n; }" },
        b: {
            src: "#version 450\nlayout (constant_id = 0) const int tile = 4;\nlayout (constant_id = 1) const int depth = 2;\nlayout (binding = 0) buffer b { int d[]; };\nlayout (push_constant) uniform parameter { int n; int f; } p;\nvoid main() { d[0] = tile + depth + p.n + p.f; }",
            share: [a::SpecConstants, a::PushConstants],
        },
    },
}

fn main() {}
