//! Phase 6: SPIR-V reflection. Everything the generated bindings say about descriptors, push
//! constants, specialization constants and the workgroup size, and what the runtime needs to
//! know about the shader (whether it reads `gl_NumWorkGroups`, the cooperative-matrix shapes it
//! multiplies, what its capabilities need), is read here from the compiled module, never from the
//! GLSL text.

mod capabilities;
pub(crate) mod coopmat;
mod index;
mod interface;

use index::{id, lit, ModuleIndex};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Decoration, ExecutionMode, Op};
use vkprism_core::{
    Access, BindingKind, CoopMatShape, DeviceFact, ElementType, FeatureSet, LocalSizeDim,
    ScalarKind,
};

/// One descriptor binding of one variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Descriptor set (vkprism kernels use 0 only: the model checks).
    pub set: u32,
    /// Binding number.
    pub binding: u32,
    /// The block's name, else the variable's (images: the variable's).
    pub name: String,
    /// Buffer or image, storage or uniform/sampled.
    pub kind: BindingKind,
    /// From the `readonly` / `writeonly` qualifiers.
    pub access: Access,
    /// The runtime array's element (buffers) or the texel (images).
    pub element: ElementType,
    /// Image dimensionality (1, 2, 3); 0 for buffers.
    pub dims: u8,
}

/// The push-constant block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushBlock {
    /// The block's instance name (`p` for `psc`).
    pub instance: String,
    /// Bytes up to the end of the last member.
    pub size: u32,
    /// The members, by offset.
    pub members: Vec<PushMember>,
}

/// One member of the push-constant block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushMember {
    /// The member's name in GLSL (`member<i>` without one).
    pub name: String,
    /// Byte offset in the block.
    pub offset: u32,
    /// The scalar type of each component.
    pub scalar: ScalarKind,
    /// Scalars per element (vector width).
    pub components: u32,
    /// Array length, `None` for a single value.
    pub array: Option<u32>,
    /// Bytes the member takes.
    pub size: u32,
}

/// One specialization constant (other than the workgroup size's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecConstant {
    /// Its `constant_id`.
    pub id: u32,
    /// Its name in GLSL (`constant_<id>` without one).
    pub name: String,
    /// 32-bit int, uint, float or bool.
    pub scalar: ScalarKind,
    /// The default's bits as SPIR-V stores them.
    pub default_bits: u32,
}

/// What one variant's module declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reflection {
    /// Descriptor bindings, sorted by (set, binding).
    pub bindings: Vec<Binding>,
    /// The push-constant block, if any.
    pub push: Option<PushBlock>,
    /// Specialization constants other than the workgroup size's, by id.
    pub spec: Vec<SpecConstant>,
    /// The workgroup size.
    pub local_size: [LocalSizeDim; 3],
    /// The module decorates something with `BuiltIn NumWorkgroups`.
    pub reads_num_workgroups: bool,
    /// The cooperative-matrix multiply-adds the module performs.
    pub cooperative_matrices: Vec<CoopMatShape>,
    /// The device facts the module reads (specialization constants with reserved ids).
    pub device_facts: Vec<DeviceFact>,
    /// What the module's `OpCapability` declarations need of the device.
    pub capabilities_require: FeatureSet,
}

/// Why a module could not be reflected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectError(pub String);

/// Reflects one variant's module.
pub fn reflect(words: &[u32]) -> Result<Reflection, ReflectError> {
    let module = coopmat::load_module(words)
        .map_err(|e| ReflectError(format!("SPIR-V parse error: {e}")))?;
    let c = ModuleIndex::new(&module);
    let (bindings, push) = interface::interface(&c, &module.types_global_values)?;
    let (local_size, local_size_ids) = local_size(&c, &module);
    let spec = spec_constants(&c, &module.types_global_values, &local_size_ids)?;
    let (device_facts, spec) = device_facts(spec)?;
    // Declared for the whole kernel, read by the variants that compile a use.
    let used = referenced_ids(&module);
    let device_facts = device_facts
        .into_iter()
        .filter(|(_, rid)| used.contains(rid))
        .map(|(f, _)| f)
        .collect();
    let cooperative_matrices = coopmat::shapes(&module).map_err(ReflectError)?;
    Ok(Reflection {
        bindings,
        push,
        spec,
        local_size,
        reads_num_workgroups: decorates_builtin(&module, BuiltIn::NumWorkgroups),
        cooperative_matrices,
        device_facts,
        capabilities_require: capabilities::required_features(words)
            .union(coopmat::scope_features(&module)),
    })
}

/// The ids instructions use as operands, in functions and in global values (a specialization
/// constant operation reading another), not counting names and decorations.
fn referenced_ids(module: &Module) -> std::collections::HashSet<u32> {
    let functions = module.functions.iter().flat_map(|f| {
        f.def
            .iter()
            .chain(f.parameters.iter())
            .chain(
                f.blocks
                    .iter()
                    .flat_map(|b| b.label.iter().chain(&b.instructions)),
            )
            .chain(f.end.iter())
    });
    functions
        .chain(module.types_global_values.iter())
        .flat_map(|i| i.operands.iter())
        .filter_map(|o| match o {
            Operand::IdRef(x) => Some(*x),
            _ => None,
        })
        .collect()
}

/// Device facts, each with the result id of its specialization constant.
type FactIds = Vec<(DeviceFact, u32)>;

/// Splits the device facts (`ncnn_subgroupSize`, ...: the preamble declares them with their
/// reserved ids), each with its result id, from the kernel's own constants; a constant of the
/// kernel's own with a reserved id is an error (the runtime would overwrite it with a device
/// fact).
fn device_facts(
    spec: Vec<(SpecConstant, u32)>,
) -> Result<(FactIds, Vec<SpecConstant>), ReflectError> {
    let mut facts = Vec::new();
    let mut own = Vec::new();
    for (s, rid) in spec {
        match DeviceFact::from_spec_id(s.id) {
            Some(f) if f.glsl_name() == s.name => facts.push((f, rid)),
            Some(f) => {
                return Err(ReflectError(format!(
                    "specialization constant `{}` has constant_id {}, which vkprism reserves for the device fact `{}` (ids {} to {} are the device facts'); choose another id",
                    s.name,
                    s.id,
                    f.glsl_name(),
                    vkprism_core::FIRST_DEVICE_FACT_ID,
                    vkprism_core::FIRST_DEVICE_FACT_ID + DeviceFact::ALL.len() as u32 - 1
                )))
            }
            None => own.push(s),
        }
    }
    Ok((facts, own))
}

/// Whether anything, or any block member, is decorated `BuiltIn builtin`.
fn decorates_builtin(module: &Module, builtin: BuiltIn) -> bool {
    module.annotations.iter().any(|i| {
        let operands = match i.class.opcode {
            Op::Decorate => i.operands.get(1..),
            Op::MemberDecorate => i.operands.get(2..),
            _ => None,
        };
        matches!(
            operands,
            Some([Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b), ..]) if *b == builtin
        )
    })
}

/// The workgroup size: the `LocalSize` execution mode, overridden by a `WorkgroupSize` spec
/// composite, or SPIR-V 1.6's `LocalSizeId` of (spec) constants; and the ids of those constants
/// (which are not user constants).
fn local_size(c: &ModuleIndex, module: &Module) -> ([LocalSizeDim; 3], Vec<u32>) {
    let mut local_size = [LocalSizeDim {
        default: 1,
        spec_id: None,
    }; 3];
    let mut local_ids = Vec::new();
    for i in &module.execution_modes {
        match i.operands.get(1) {
            Some(Operand::ExecutionMode(ExecutionMode::LocalSize)) => {
                for (d, dim) in local_size.iter_mut().enumerate() {
                    dim.default = i.operands.get(2 + d).map(lit).unwrap_or(1);
                }
            }
            Some(Operand::ExecutionMode(ExecutionMode::LocalSizeId)) => {
                for (d, dim) in local_size.iter_mut().enumerate() {
                    let Some(cid) = i.operands.get(2 + d).map(id) else {
                        continue;
                    };
                    dim.default = c.constants.get(&cid).copied().unwrap_or(1);
                    dim.spec_id = c.decoration_value(cid, Decoration::SpecId);
                    if dim.spec_id.is_some() {
                        local_ids.push(cid);
                    }
                }
            }
            _ => {}
        }
    }
    // Under `LocalSizeId`, glslang declares `gl_WorkGroupSize` again as a composite of other
    // constants with the same spec ids: those are the workgroup size too.
    let size_spec_ids: Vec<u32> = local_size.iter().filter_map(|d| d.spec_id).collect();
    if !local_ids.is_empty() {
        for i in &module.types_global_values {
            let Some(rid) = i.result_id else { continue };
            let same = c
                .decoration_value(rid, Decoration::SpecId)
                .is_some_and(|s| size_spec_ids.contains(&s));
            if same && !local_ids.contains(&rid) {
                local_ids.push(rid);
            }
        }
    }
    for i in &module.types_global_values {
        let Some(rid) = i.result_id else { continue };
        let is_wg = c.decorations.get(&rid).is_some_and(|ds| {
            ds.iter().any(|d| {
                matches!(
                    d.operands.get(2),
                    Some(Operand::BuiltIn(BuiltIn::WorkgroupSize))
                )
            })
        });
        if is_wg && i.class.opcode == Op::SpecConstantComposite {
            for (d, o) in i.operands.iter().take(3).enumerate() {
                let cid = id(o);
                local_size[d].default = c.constants.get(&cid).copied().unwrap_or(1);
                local_size[d].spec_id = c.decoration_value(cid, Decoration::SpecId);
                local_ids.push(cid);
            }
        }
    }
    (local_size, local_ids)
}

/// The specialization constants other than the workgroup size's, sorted by id, each with its
/// result id.
fn spec_constants(
    c: &ModuleIndex,
    globals: &[Instruction],
    local_size_ids: &[u32],
) -> Result<Vec<(SpecConstant, u32)>, ReflectError> {
    let mut spec = Vec::new();
    for i in globals {
        let Some(rid) = i.result_id else { continue };
        let default_bits = match i.class.opcode {
            Op::SpecConstant => i.operands.first().map(lit).unwrap_or(0),
            Op::SpecConstantTrue => 1,
            Op::SpecConstantFalse => 0,
            _ => continue,
        };
        let Some(sid) = c.decoration_value(rid, Decoration::SpecId) else {
            continue;
        };
        if local_size_ids.contains(&rid) {
            continue;
        }
        let scalar = i.result_type.and_then(|t| c.scalar(t)).ok_or_else(|| {
            ReflectError(format!("specialization constant {sid}: unsupported type"))
        })?;
        if scalar.size() != 4 {
            return Err(ReflectError(format!("specialization constant {sid}: only 32-bit int, uint, float and bool are supported")));
        }
        let name = c
            .names
            .get(&rid)
            .cloned()
            .unwrap_or_else(|| format!("constant_{sid}"));
        spec.push((
            SpecConstant {
                id: sid,
                name,
                scalar,
                default_bits,
            },
            rid,
        ));
    }
    spec.sort_by_key(|(s, _)| s.id);
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::{coopmat, decorates_builtin, BuiltIn};

    fn reads_num_workgroups(words: &[u32]) -> bool {
        let module = coopmat::load_module(words).expect("a well-formed module");
        decorates_builtin(&module, BuiltIn::NumWorkgroups)
    }

    #[test]
    fn builtin_scan_finds_decorations_on_variables_and_block_members() {
        const NUM_WORKGROUPS: u32 = 24;
        let header = [0x0723_0203, 0x0001_0300, 0, 100, 0];
        let decorate = |target: u32, builtin: u32| [(4 << 16) | 71, target, 11, builtin];
        let mut words = header.to_vec();
        words.extend(decorate(7, 28)); // GlobalInvocationId
        assert!(!reads_num_workgroups(&words));
        words.extend([(5 << 16) | 72, 9, 0, 11, NUM_WORKGROUPS]); // on a block member
        assert!(reads_num_workgroups(&words));
        let mut words = header.to_vec();
        words.extend(decorate(7, NUM_WORKGROUPS));
        assert!(reads_num_workgroups(&words));
        assert!(!reads_num_workgroups(&header));
    }
}
