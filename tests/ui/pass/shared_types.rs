// `share`: one source compiled twice (another define) gives two kernels whose constants are one
// type, so one value serves both and no code copies fields between them.
vkprism::compute_shader! {
    pub mod ops,
    shaders: {
        scale: { path: "kernels/scale_by.comp" },
        scale_twice: {
            path: "kernels/scale_by.comp",
            define: [("TWICE", "1")],
            share: [scale::SpecConstants, scale::PushConstants],
        },
    },
}

fn both(spec: &ops::scale::SpecConstants, push: &ops::scale::PushConstants) -> (i32, f32) {
    (spec.tile, push.factor)
}

fn main() {
    let spec = ops::scale_twice::SpecConstants { tile: 8 };
    let push = ops::scale_twice::PushConstants::new(64, 2.5);
    assert_eq!(both(&spec, &push), (8, 2.5));
    // The defaults are the owner's (identical by the layout check).
    assert_eq!(ops::scale_twice::SpecConstants::default().tile, 4);
    assert_eq!(ops::scale::INFO.name, "scale");
    assert_eq!(ops::scale_twice::INFO.name, "scale_twice");
}
