//! Cooperative-matrix shapes (`VK_KHR_cooperative_matrix`): what a variant's SPIR-V multiplies,
//! reflected at build time, and what a device offers, queried at run time. A `_cm` variant runs
//! only where every shape it needs is offered.

use crate::ScalarKind;
use std::fmt;

/// One multiply-add `(M×K) · (K×N) + (M×N)` at subgroup scope, with its component types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CoopMatShape {
    /// Rows of the operand A and of the result.
    pub m: u32,
    /// Columns of the operand B and of the result.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// Component type of the M×K operand.
    pub a: ScalarKind,
    /// Component type of the K×N operand.
    pub b: ScalarKind,
    /// Component type of the M×N accumulator.
    pub c: ScalarKind,
    /// Component type of the result.
    pub result: ScalarKind,
}

impl fmt::Display for CoopMatShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} {:?}*{:?}+{:?}->{:?}",
            self.m, self.n, self.k, self.a, self.b, self.c, self.result
        )
    }
}

/// Distinct shapes in a fixed-capacity list, in the order they were added (fixed so that
/// `DeviceFeatures` stays `Copy`): [`CoopMatShapes`], [`WorkgroupMatrixShapes`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapeList<T: Copy, const N: usize> {
    items: [Option<T>; N],
}

impl<T: Copy, const N: usize> Default for ShapeList<T, N> {
    fn default() -> Self {
        ShapeList { items: [None; N] }
    }
}

impl<T: Copy + PartialEq, const N: usize> ShapeList<T, N> {
    /// How many shapes the list holds at most.
    pub const CAPACITY: usize = N;

    /// Adds `shape` unless present; returns false when the list is full.
    pub fn push(&mut self, shape: T) -> bool {
        if self.contains(&shape) {
            return true;
        }
        match self.items.iter_mut().find(|s| s.is_none()) {
            Some(slot) => {
                *slot = Some(shape);
                true
            }
            None => false,
        }
    }

    /// Whether `shape` is in the list.
    pub fn contains(&self, shape: &T) -> bool {
        self.iter().any(|s| s == *shape)
    }

    /// The shapes, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.items.iter().flatten().copied()
    }

    /// Whether the list holds no shape.
    pub fn is_empty(&self) -> bool {
        self.items[0].is_none()
    }
}

impl<T: Copy + PartialEq, const N: usize> FromIterator<T> for ShapeList<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = ShapeList::default();
        for shape in iter {
            s.push(shape);
        }
        s
    }
}

/// The subgroup-scope shapes a device offers (more room than any driver reports today: the
/// H100 reports 14).
pub type CoopMatShapes = ShapeList<CoopMatShape, 48>;

/// A family of workgroup-scope shapes a device offers (`VK_NV_cooperative_matrix2`'s
/// `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`): matrices of these
/// component types whose rows and columns are multiples of `granularity`'s M, N and K, in
/// workgroups of exactly `workgroup_invocations`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkgroupMatrixShape {
    /// The granularities of M, N and K, and the component types.
    pub granularity: CoopMatShape,
    /// The workgroup size these shapes need.
    pub workgroup_invocations: u32,
}

impl WorkgroupMatrixShape {
    /// Whether an `m`×`n`×`k` multiply-add of `types`' components (their M, N and K unread) in
    /// workgroups of `invocations` is of this family.
    pub fn offers(
        &self,
        (m, n, k): (u32, u32, u32),
        types: CoopMatShape,
        invocations: u32,
    ) -> bool {
        let g = self.granularity;
        let same_types = (g.a, g.b, g.c, g.result) == (types.a, types.b, types.c, types.result);
        let multiple = |v: u32, of: u32| of > 0 && v.is_multiple_of(of);
        same_types
            && invocations == self.workgroup_invocations
            && multiple(m, g.m)
            && multiple(n, g.n)
            && multiple(k, g.k)
    }
}

/// The workgroup-scope shape families of a device; empty without `VK_NV_cooperative_matrix2`.
pub type WorkgroupMatrixShapes = ShapeList<WorkgroupMatrixShape, 32>;

impl WorkgroupMatrixShapes {
    /// Whether some family offers an `m`×`n`×`k` multiply-add of `types`' components in
    /// workgroups of `invocations` ([`WorkgroupMatrixShape::offers`]).
    pub fn offer(&self, mnk: (u32, u32, u32), types: CoopMatShape, invocations: u32) -> bool {
        self.iter().any(|s| s.offers(mnk, types, invocations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 16×16×16 fp16 into fp32.
    const F16_16X16X16: CoopMatShape = CoopMatShape {
        m: 16,
        n: 16,
        k: 16,
        a: ScalarKind::F16,
        b: ScalarKind::F16,
        c: ScalarKind::F32,
        result: ScalarKind::F32,
    };

    #[test]
    fn list_keeps_each_shape_once() {
        let f16 = F16_16X16X16;
        let mut s = CoopMatShapes::default();
        assert!(s.is_empty());
        assert!(s.push(f16) && s.push(f16));
        assert_eq!(s.iter().count(), 1);
        assert!(s.contains(&f16));
        assert!(!s.contains(&CoopMatShape { k: 8, ..f16 }));
        assert_eq!(f16.to_string(), "16x16x16 F16*F16+F32->F32");
    }

    #[test]
    fn workgroup_shapes_offer_multiples_of_their_granularity_at_their_workgroup_size() {
        let types = F16_16X16X16;
        let shapes: WorkgroupMatrixShapes = [WorkgroupMatrixShape {
            granularity: types,
            workgroup_invocations: 128,
        }]
        .into_iter()
        .collect();
        assert!(shapes.offer((128, 128, 64), types, 128));
        assert!(!shapes.offer((128, 128, 64), types, 256));
        assert!(!shapes.offer((128, 120, 64), types, 128));
        let bf16 = CoopMatShape {
            a: ScalarKind::Bf16,
            b: ScalarKind::Bf16,
            ..types
        };
        assert!(!shapes.offer((128, 128, 64), bf16, 128));
        assert!(!WorkgroupMatrixShapes::default().offer((128, 128, 64), types, 128));
    }
}
