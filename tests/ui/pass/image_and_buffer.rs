vkprism::compute_shader! {
    pub mod double,
    src: r#"
#version 450
#if NCNN_image_shader
layout (binding = 0) uniform unfp sampler3D bottom_blob;
layout (binding = 1, imfmtc4) writeonly uniform unfp image3D top_blob;
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#endif
layout (push_constant) uniform parameter { int w; int h; int c; int cstep; } p;
void main() {
    ivec3 g = ivec3(gl_GlobalInvocationID);
    if (g.x >= p.w || g.y >= p.h || g.z >= p.c) return;
#if NCNN_image_shader
    image3d_st4(top_blob, g, image3d_ld4(bottom_blob, g) * afp(2));
#else
    int i = g.z * p.cstep + g.y * p.w + g.x;
    buffer_st4(top_blob_data, i, buffer_ld4(bottom_blob_data, i) * afp(2));
#endif
}
"#,
}

#[allow(dead_code)]
fn bind_buffers<'a>(a: &'a vkprism::Tensor, b: &'a vkprism::Tensor) -> double::BufferBindings<'a> {
    double::BufferBindings { bottom_blob: a, top_blob: b }
}

#[allow(dead_code)]
fn bind_images<'a>(a: &'a vkprism::Image, b: &'a vkprism::Image) -> double::ImageBindings<'a> {
    double::ImageBindings { bottom_blob: a, top_blob: b }
}

fn main() {
    assert_eq!(double::VARIANTS.len(), 12);
    assert!(double::VARIANT_NAMES.contains(&"fp16sa_image"));
}
