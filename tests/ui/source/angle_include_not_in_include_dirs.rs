vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#include <missing.glsl>
void main() {}
"#,
    include: ["."],
}

fn main() {}
