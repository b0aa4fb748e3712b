// The MPI side of collectives::world(). Private to backend/collectives.
#pragma once
#include <memory>

#include "backend/collectives/communicator.h"

namespace keras::collectives::detail {

// MPI's world communicator when this build has MPI and the process was started by an MPI
// launcher (mpirun sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK); null otherwise, so that a
// plain run never pays for MPI_Init. Initialises MPI (threads: funneled) and finalises it at exit.
std::unique_ptr<Communicator> make_mpi_world();

}  // namespace keras::collectives::detail
