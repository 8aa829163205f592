// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// MPI beyond lesson 09's reference: errors returned, a derived datatype, non-blocking collectives.
#include <mpi.h>
#include <vector>

int exchange(std::vector<int>& data) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype block;
    MPI_Type_contiguous(4, MPI_INT, &block);
    MPI_Type_commit(&block);
    MPI_Request request;
    int rc = MPI_Ibcast(data.data(), 1, block, 0, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Type_free(&block);
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    return rc;
}
