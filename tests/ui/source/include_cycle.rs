vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#include "include/self.glsl"
void main() {}
"#,
}

fn main() {}
