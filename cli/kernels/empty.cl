// The empty kernel `kfd bench` and tests/c/bench.sh dispatch to time a launch: nothing but s_endpgm.
__kernel void empty(void) {}
