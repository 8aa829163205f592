// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// What ends the job, starts processes, opens files or connects to other jobs: each stays refused.
#include <mpi.h>

int leave_the_job(char* command) {
    MPI_Comm children;
    MPI_Comm_spawn(command, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &children, MPI_ERRCODES_IGNORE);
    MPI_File file;
    MPI_File_open(MPI_COMM_WORLD, command, MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
    char port[MPI_MAX_PORT_NAME];
    MPI_Open_port(MPI_INFO_NULL, port);
    MPI_Comm other;
    MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &other);
    MPI_Info environment = MPI_INFO_ENV;
    int keys = 0;
    MPI_Info_get_nkeys(environment, &keys);
    return MPI_Abort(MPI_COMM_WORLD, keys);
}
