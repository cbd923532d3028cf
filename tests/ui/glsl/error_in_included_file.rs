vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_blob_data[]; };
#include "include/broken.glsl"
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    buffer_st4(a_blob_data, i, twice(buffer_ld4(a_blob_data, i)));
}
"#,
}

fn main() {}
