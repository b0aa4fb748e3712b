// How this process's OpenMP threads wait between parallel regions: spinning on their cores or
// sleeping. libgomp decides it once, from the environment, when it loads, and offers no call to
// ask; work that wants a core during the serial stretches of a training step (the batch copies of
// keras/data/dataset_copy.h) only gets one when the team's threads sleep there.
#pragma once

namespace keras {

// True when a team of `team` OpenMP threads on a process allowed `cores` cores keeps its cores
// busy between parallel regions, by libgomp's rules: GOMP_SPINCOUNT when set and valid (a count
// > 0, or "infinite"), else OMP_WAIT_POLICY (active or unset: spin, passive: sleep at once); a
// team larger than the cores spins only 100-1000 times before sleeping, which counts as sleeping.
// Null strings are unset variables; values libgomp would reject count as unset.
bool omp_threads_spin(const char* omp_wait_policy, const char* gomp_spincount, int team, int cores);

// The same for this process: its environment, keras::num_threads() and available_cores().
bool omp_threads_spin();

// The cores this process may run on (its CPU affinity mask), at least 1.
int available_cores();

}  // namespace keras
