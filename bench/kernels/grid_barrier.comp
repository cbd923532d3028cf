#version 450
// `phases` phases of nearly no work, each ended by a barrier across the whole grid inside the
// one dispatch: every workgroup adds 1 to `counter` and waits until it holds (phase + 1) ×
// the grid's workgroups. Sound only where every workgroup of the grid is resident at once;
// a wait gives up after `patience` reads and counts itself in `gave_up`, so a grid that was
// not resident ends, and says so, instead of hanging. `counter` and `gave_up` start at 0.
layout (local_size_x = 64) in;

layout (binding = 0) coherent buffer counter_blob { uint counter; uint gave_up; };

layout (push_constant) uniform parameter { uint phases; uint patience; } p;

void main()
{
    const uint groups = gl_NumWorkGroups.x;
    for (uint phase = 0u; phase < p.phases; phase++)
    {
        barrier();
        if (gl_LocalInvocationIndex == 0u)
        {
            memoryBarrierBuffer();
            atomicAdd(counter, 1u);
            const uint target = (phase + 1u) * groups;
            uint reads = 0u;
            while (atomicAdd(counter, 0u) < target && reads < p.patience) reads++;
            if (reads == p.patience) atomicAdd(gave_up, 1u);
            memoryBarrierBuffer();
        }
        barrier();
    }
}
