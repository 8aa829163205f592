# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""What a student's translation unit may include, use and define: the grader's lists, in one place.

A student's code runs inside the test program, so it could do what the test program does.
Before any of it runs, integrity.py checks the student's object file (and the assembly the
compiler wrote for it) against these lists; a lesson whose file breaks one scores 0, and the
report names what was refused and what to use instead. An instructor relaxes a list for one run
with `--allow-header GLOB` or `--allow-symbol NAME` (grade.py).

The lists are ALLOWLISTS: anything they do not name is refused. They were built from what the
reference solutions use and from what students plausibly write (containers, strings, streams to
stdout and stderr, threads, atomics, chrono, exceptions, printf, math, the CUDA runtime, cuBLAS
and NCCL); a correct file that is refused is as wrong as an attack that scores, so a new need
is added here, with its reason, rather than worked around.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- headers
# Only the lesson's own folder, common/, the CUDA toolkit (with CCCL and cuBLAS), NCCL's and MPI's
# include folders and the system's C and C++ headers. Never solutions/, tests/, Catch2, another lesson's
# folder or anything under a build folder. Every path is resolved before it is judged.

# System folders whose headers any translation unit may include (besides the CUDA toolkit and
# NCCL folders, which integrity.py finds on this machine).
SYSTEM_HEADER_ROOTS = ("/usr/include", "/usr/lib/gcc", "/usr/local/include", "/usr/lib/llvm")

# A header with one of these folder names in its path is refused wherever it lies: the test
# framework is the grader's, not the student's.
REFUSED_HEADER_FOLDERS = ("catch2",)

# ----------------------------------------------------------------------------- references
# The undefined symbols of the student's object: what its code calls or reads elsewhere.

# C functions and objects, by exact name. Each group says why it is here.
ALLOWED_C_NAMES = {
    # Memory and strings.
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "memcpy", "memmove", "memset", "memcmp", "memchr",
    "strlen", "strnlen", "strcmp", "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr",
    "strstr", "strspn", "strcspn", "strerror", "strdup", "strtok", "strtok_r",
    "strtol", "strtoll", "strtoul", "strtoull", "strtod", "strtof", "strtold", "atoi", "atol", "atoll", "atof",
    "__isoc23_strtol", "__isoc23_strtoll", "__isoc23_strtoul", "__isoc23_strtoull",
    "strtoimax", "strtoumax", "__isoc23_strtoimax", "__isoc23_strtoumax", "imaxabs", "imaxdiv",  # <cinttypes>
    # Wide strings: std::to_wstring (vswprintf), std::stoi of a std::wstring (wcstol), <cwchar>'s conversions.
    "wcstol", "wcstoll", "wcstoul", "wcstoull", "wcstod", "wcstof", "wcstold", "wcstoimax", "wcstoumax",
    "__isoc23_wcstol", "__isoc23_wcstoll", "__isoc23_wcstoul", "__isoc23_wcstoull", "__isoc23_wcstoimax",
    "__isoc23_wcstoumax", "swprintf", "vswprintf",
    "stpcpy", "mempcpy",
    "sscanf", "vsscanf", "__isoc99_sscanf", "__isoc99_vsscanf", "__isoc23_sscanf", "__isoc23_vsscanf",  # from a string
    "abs", "labs", "llabs", "div", "ldiv", "lldiv", "qsort", "bsearch", "rand", "srand", "rand_r",
    "strcasecmp", "strncasecmp", "memrchr", "strerror_r", "__xpg_strerror_r", "strsignal",
    # <cctype> and <cwctype>: classification and case of characters (glibc's tables for the inlined forms).
    "isalnum", "isalpha", "isblank", "iscntrl", "isdigit", "isgraph", "islower", "isprint", "ispunct", "isspace",
    "isupper", "isxdigit", "tolower", "toupper", "__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc",
    "iswalnum", "iswalpha", "iswblank", "iswcntrl", "iswdigit", "iswgraph", "iswlower", "iswprint", "iswpunct",
    "iswspace", "iswupper", "iswxdigit", "towlower", "towupper",
    "wcslen", "wcscmp", "wcsncmp", "wcscpy", "wcsncpy", "wmemcpy", "wmemmove", "wmemset", "wmemcmp", "wmemchr",
    "mbstowcs", "wcstombs", "mbrtowc", "wcrtomb", "mbrlen", "btowc", "wctob",
    # Formatted output to the program's own stdout and stderr (no way to open another stream).
    "printf", "vprintf", "puts", "putchar", "fprintf", "vfprintf", "fputs", "fputc", "putc", "fwrite", "fflush",
    "snprintf", "vsnprintf", "sprintf", "vsprintf", "stdout", "stderr",
    "setvbuf", "setbuf", "setlinebuf",  # their buffering (unbuffered debugging output)
    # Errors, failures and time.
    "__errno_location", "abort", "__assert_fail", "__stack_chk_fail", "perror",
    # <cfenv>: the floating-point environment of the calling thread (rounding mode, exception flags).
    "feclearexcept", "fegetexceptflag", "feraiseexcept", "fesetexceptflag", "fetestexcept", "fegetround",
    "fesetround", "fegetenv", "feholdexcept", "fesetenv", "feupdateenv",
    "__libc_single_threaded",  # read by std::shared_ptr and std::string to skip atomics in a program with one thread
    # Who and where the process is, for an error message: the host's name, the process and thread ids.
    "gethostname", "uname", "getpid", "getppid", "gettid", "sysconf", "get_nprocs", "get_nprocs_conf", "sched_getcpu",
    "clock_gettime", "clock", "time", "gettimeofday", "nanosleep", "usleep", "sleep", "sched_yield",
    "clock_nanosleep", "clock_getres", "gmtime", "gmtime_r", "difftime", "timespec_get",  # UTC: no time zone read
    # Threads: what std::thread, std::mutex and std::condition_variable inline into the caller.
    "pthread_create", "pthread_join", "pthread_detach", "pthread_self", "pthread_equal", "pthread_once",
    "pthread_mutex_init", "pthread_mutex_destroy", "pthread_mutex_lock", "pthread_mutex_trylock",
    "pthread_mutex_unlock", "pthread_mutex_clocklock", "pthread_mutex_timedlock",
    "pthread_cond_init", "pthread_cond_destroy", "pthread_cond_wait", "pthread_cond_timedwait",
    "pthread_cond_clockwait", "pthread_cond_signal", "pthread_cond_broadcast",
    "pthread_key_create", "pthread_key_delete", "pthread_getspecific", "pthread_setspecific",
    "__pthread_key_create", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_unlock",
    "pthread_rwlock_init", "pthread_rwlock_destroy", "pthread_rwlock_tryrdlock", "pthread_rwlock_trywrlock",
    "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock", "pthread_rwlock_timedrdlock",
    "pthread_rwlock_timedwrlock",  # std::shared_timed_mutex's try_lock_for/_until, shared or not
    "pthread_setname_np", "pthread_getname_np",  # a thread's name, as a debugger or top shows it
    "pthread_attr_init", "pthread_attr_destroy", "pthread_attr_setstacksize", "pthread_attr_getstacksize",
    "pthread_setaffinity_np", "pthread_getaffinity_np", "sched_getaffinity", "sched_setaffinity",
    "pthread_barrier_init", "pthread_barrier_destroy", "pthread_barrier_wait", "pthread_spin_init",
    "pthread_spin_destroy", "pthread_spin_lock", "pthread_spin_trylock", "pthread_spin_unlock",
    "pthread_mutexattr_init", "pthread_mutexattr_destroy", "pthread_mutexattr_settype",
    "pthread_condattr_init", "pthread_condattr_destroy", "pthread_condattr_setclock",
    "sem_init", "sem_destroy", "sem_wait", "sem_trywait", "sem_timedwait", "sem_post",  # unnamed semaphores only
    "__once_proxy",  # std::call_once: what pthread_once calls, which runs the callable std::call_once stored
    # The C++ runtime: exceptions (thrown and caught with throw/catch), function-local statics,
    # static destructors, RTTI, thread_local.
    "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw", "__cxa_begin_catch", "__cxa_end_catch",
    "__cxa_rethrow", "__cxa_get_exception_ptr", "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort",
    "__cxa_atexit", "atexit", "__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_bad_cast", "__cxa_bad_typeid",
    "__cxa_throw_bad_array_new_length", "__cxa_call_terminate", "__cxa_call_unexpected", "__cxa_thread_atexit",
    "__gxx_personality_v0", "_Unwind_Resume", "__dynamic_cast", "__tls_get_addr",
    "__cxa_demangle",  # abi::__cxa_demangle: a type's name as written, for a message
    # NVTX's injection loader compiled out (tests/meson.build) still names dlclose in an unoptimised
    # build: it releases only what dlopen returned, and dlopen stays refused.
    "dlclose",
    # The linker's and the compiler's own.
    "_GLOBAL_OFFSET_TABLE_", "__dso_handle",
}

# glibc's checked form of each function above, __NAME_chk, where it has one: what _FORTIFY_SOURCE
# (on by default in Ubuntu's GCC, the GPU hosts' compiler) makes of a call whose buffer's size it
# knows (memcpy, printf, gethostname, ...): the same call with a bounds check that aborts. Derived
# here, not listed, so that no allowed function is refused in its fortified form: a correct file was,
# for __gethostname_chk, on the GPU host.
ALLOWED_C_NAMES |= {f"__{name}_chk" for name in ALLOWED_C_NAMES if not name.startswith("_")}

# libm: these functions with their float (f) and long double (l) variants.
_MATH = ("sqrt", "cbrt", "hypot", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos",
         "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "fabs", "floor", "ceil", "round",
         "lround", "llround", "trunc", "rint", "lrint", "llrint", "nearbyint", "fmod", "remainder", "fmin", "fmax",
         "fma", "frexp", "ldexp", "modf", "erf", "erfc", "tgamma", "lgamma", "copysign", "nextafter", "ilogb",
         "logb", "scalbn", "scalbln", "asinh", "acosh", "atanh", "fdim", "remquo", "nan", "nexttoward",
         "sincos",  # GCC joins sin(x) and cos(x) of one x into one call
         # std::complex's functions (std::abs, std::exp, std::sqrt, std::pow of a complex number)
         "cabs", "carg", "cexp", "clog", "csqrt", "cpow", "csin", "ccos", "ctan", "casin", "cacos", "catan", "csinh",
         "ccosh", "ctanh", "casinh", "cacosh", "catanh", "cproj")
ALLOWED_C_NAMES |= {name + suffix for name in _MATH for suffix in ("", "f", "l")}

# libgcc's arithmetic, which the compiler calls for what the processor has no instruction for:
# __int128 division and shifts, std::popcount and other bit counts without -mpopcnt, the product
# and quotient of std::complex numbers, a power with an integer exponent, conversions between
# __int128 or _Float16 and floating point. Pure functions of their arguments.
ALLOWED_C_NAMES |= {
    "__divti3", "__modti3", "__udivti3", "__umodti3", "__divmodti4", "__udivmodti4", "__multi3", "__ashlti3",
    "__ashrti3", "__lshrti3", "__negti2", "__cmpti2", "__ucmpti2",
    "__popcountdi2", "__popcountti2", "__paritydi2", "__parityti2", "__ffsdi2", "__ffsti2", "__clzdi2", "__clzti2",
    "__ctzdi2", "__ctzti2", "__clrsbdi2", "__clrsbti2", "__bswapdi2", "__bswapsi2",
    "__mulsc3", "__muldc3", "__mulxc3", "__divsc3", "__divdc3", "__divxc3", "__powisf2", "__powidf2", "__powixf2",
    "__extendhfsf2", "__extendhfdf2", "__truncsfhf2", "__truncdfhf2", "__fixsfti", "__fixdfti", "__fixxfti",
    "__fixunssfti", "__fixunsdfti", "__fixunsxfti", "__floattisf", "__floattidf", "__floattixf", "__floatuntisf",
    "__floatuntidf", "__floatuntixf",
    # __float128 (TFmode) in software: GCC 13's <format> compares and converts one in every std::format.
    "__addtf3", "__subtf3", "__multf3", "__divtf3", "__negtf2", "__eqtf2", "__netf2", "__getf2", "__gttf2",
    "__letf2", "__lttf2", "__unordtf2", "__cmptf2", "__extendsftf2", "__extenddftf2", "__extendxftf2",
    "__trunctfsf2", "__trunctfdf2", "__trunctfxf2", "__fixtfsi", "__fixtfdi", "__fixtfti", "__fixunstfsi",
    "__fixunstfdi", "__fixunstfti", "__floatsitf", "__floatditf", "__floattitf", "__floatunsitf", "__floatunditf",
    "__floatuntitf", "__powitf2", "__multc3", "__divtc3",
}

# libc's syscall() with these numbers only (integrity.only_allowed_system_calls reads each call's
# number from the machine code): libstdc++ inlines it for <atomic>'s wait and notify.
ALLOWED_SYSTEM_CALLS = {
    0xca: "futex: std::atomic::wait/notify_*, std::atomic_flag::wait, std::latch, std::barrier, "
          "std::counting_semaphore, std::jthread's std::stop_token (it waits on a word of memory)",
}

# MPI (lesson 09: one process per GPU): all of its communication (point to point, collectives,
# blocking, non-blocking and persistent, one-sided windows), communicators, groups and topologies,
# datatypes (derived ones too), reduction operations, requests, info objects, attributes, error
# handlers and error classes, by the prefix MPI_ (below); and Open MPI's predefined handles
# (MPI_COMM_WORLD, MPI_INT, MPI_SUM, MPI_ERRORS_RETURN, ... are the addresses of these objects in
# Open MPI's mpi.h; MPICH's are integer constants), by exact name. Refused (REFUSED_C_PREFIXES):
# what ends the job, starts processes, opens files, connects to other jobs or changes MPI's own
# settings, and the environment's info object (MPI_INFO_ENV).
_MPI_TYPES = ("byte", "packed", "char", "signed_char", "unsigned_char", "wchar", "short", "unsigned_short", "int",
              "unsigned", "long", "unsigned_long", "long_long_int", "unsigned_long_long", "float", "double",
              "long_double", "c_bool", "cxx_bool", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
              "int64_t", "uint64_t", "aint", "offset", "count", "c_complex", "c_float_complex", "c_double_complex",
              "c_long_double_complex", "cxx_cplex", "cxx_dblcplex", "cxx_ldblcplex", "float_int", "double_int",
              "long_int", "2int", "short_int", "longdbl_int", "lb", "ub", "datatype_null")
_MPI_OPS = ("sum", "max", "min", "prod", "land", "lor", "lxor", "band", "bor", "bxor", "maxloc", "minloc", "replace",
            "no_op", "null")
ALLOWED_C_NAMES |= {"ompi_mpi_" + name for name in _MPI_TYPES}
ALLOWED_C_NAMES |= {"ompi_mpi_op_" + name for name in _MPI_OPS}
ALLOWED_C_NAMES |= {
    "ompi_mpi_comm_world", "ompi_mpi_comm_self", "ompi_mpi_comm_null", "ompi_mpi_group_empty", "ompi_mpi_group_null",
    "ompi_mpi_errors_return", "ompi_mpi_errors_are_fatal", "ompi_mpi_errhandler_null", "ompi_mpi_info_null",
    "ompi_mpi_win_null", "ompi_request_null", "ompi_request_empty", "ompi_message_null", "ompi_message_no_proc",
    "ompi_status_empty",
}

# C names allowed by prefix: the CUDA runtime (and what nvcc generates for kernels and their
# registration), cuBLAS, NCCL and MPI. Anything else of the CUDA driver's is reached through the runtime.
# NVSHMEM (lesson 10): its host API by prefix (nvshmem_malloc, nvshmem_ptr, nvshmemx_collective_launch, ...);
# its device API never shows here (device code lies in the fatbinary, linked by nvcc -dlink).
ALLOWED_C_PREFIXES = ("cuda", "__cuda", "cublas", "nccl", "MPI_", "nvshmem_", "nvshmemx_")
# C APIs some of whose releases declare functions with C++ linkage: a free function of such a prefix, whatever
# its parameters, is judged by its name as the C name above. NVSHMEM before 3.8 (3.4.5 on the GPU hosts)
# declares nvshmemx_collective_launch and nvshmemx_collective_launch_query_gridsize outside extern "C".
CXX_LINKAGE_C_API_PREFIXES = ("nvshmem_", "nvshmemx_")
# ... except these, which hand out arbitrary functions by name (the way dlsym does).
REFUSED_DESPITE_PREFIX = {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaGetExportTable",
                          "__cudaGetExportTableInternal"}
# ... and these, by prefix: MPI's calls that end the job (MPI_Abort), start processes (MPI_Comm_spawn,
# MPI_Comm_spawn_multiple), open files (MPI_File_*, MPI_Register_datarep), connect to other jobs
# (ports, name publishing, MPI_Comm_join over a socket), or read and change MPI's own settings
# (the tools interface, MPI_T_*).
REFUSED_C_PREFIXES = ("nvshmem_global_exit", "MPI_Abort", "MPI_Comm_spawn", "MPI_File_", "MPI_Register_datarep", "MPI_Open_port",
                      "MPI_Close_port", "MPI_Comm_connect", "MPI_Comm_accept", "MPI_Comm_join", "MPI_Publish_name",
                      "MPI_Unpublish_name", "MPI_Lookup_name", "MPI_T_")

# C++ names (demangled, without template arguments and parameters; see integrity.qualified_name):
# the C++ standard library as a whole (std::, and libstdc++'s own __gnu_cxx::), except what
# REFUSED_CXX_NAMES names: what reaches outside the process. CCCL; NVTX's C++ API; the course's
# own library and the lesson's provided code. fnmatch patterns; `*` also crosses `::`.
ALLOWED_CXX_NAMES = (
    "operator new", "operator new[]", "operator delete", "operator delete[]",
    "std::*", "__gnu_cxx::*",
    "cuda::*", "cub::*", "thrust::*", "nvtx3::*",
    "course::*", "lesson[0-9][0-9]::*",
)
# Never, although a pattern above would let it through: the test support, the type of type
# descriptions (a hand-made one fakes an exception's type); what reaches outside the process:
# files and descriptors (file streams and buffers, std::filesystem, message catalogs), input
# (std::cin), the time zone database (files and the environment), a stack trace (it reads the
# program's file); and handlers that would run on the test's own failure path (std::set_terminate,
# std::set_unexpected).
REFUSED_CXX_NAMES = (
    "course::testing::*", "std::type_info*",
    "*basic_filebuf*", "*basic_ofstream*", "*basic_ifstream*", "*basic_fstream*", "*__basic_file*",
    "*stdio_filebuf*", "*stdio_sync_filebuf*", "std::*filesystem::*", "std::cin", "std::wcin",
    "std::*messages*", "std::chrono::*tzdb*", "std::chrono::*zone*", "std::chrono::remote_version",
    "std::*stacktrace*", "std::set_terminate", "std::set_unexpected",
    "std::ios_base_library_init",  # only as GCC 13's <iostream> declares it (DECLARED_BY_HEADER_ASM)
)

# The same, by mangled name: an exception_ptr made from a raw pointer (a hand-made exception).
REFUSED_MANGLED = {"_ZNSt15__exception_ptr13exception_ptrC1EPv", "_ZNSt15__exception_ptr13exception_ptrC2EPv"}
# ... and __cxa_init_primary_exception, which gives an exception a type description: both allowed only
# as std::make_exception_ptr<T> of GCC 12's and 13's <exception> uses them (and <future>, which calls it
# for a broken promise): every function that refers to them also refers to `typeinfo for T` and to
# `std::__exception_ptr::__dest_thunk<T>` of one T, a type the student may use
# (integrity.only_make_exception_ptr). Behind this, the test program's wrapped __cxa_begin_catch
# fails a case that catches a control exception Catch2 did not throw, however it was made.
MAKE_EXCEPTION_PTR_SYMBOLS = {"__cxa_init_primary_exception"} | REFUSED_MANGLED

# File-scope asm that a header emits itself, recognised line for line at the start of a block of
# file-scope asm (integrity.check_assembly): GCC 13's <iostream>, whose library makes the standard
# streams itself, declares the symbol only to need a libstdc++ that does.
HEADER_ASM = ("\t.globl _ZSt21ios_base_library_initv\n",)
# ... and the symbols such asm declares: allowed where nothing but that declaration names them (no
# relocation refers to them).
DECLARED_BY_HEADER_ASM = {"_ZSt21ios_base_library_initv"}

# An asm statement inside a host function whose only instruction is one of these: a hint to the
# processor with no effect on memory, registers or control (integrity.check_listing). CCCL's host-side
# waits (cuda::std::latch, cuda::std::counting_semaphore, cuda::std::atomic<T>::wait) spin with
# `pause` (cuda/std/__thread/threading_support.h), as a student's own spin loop may.
HARMLESS_HOST_ASM = {"pause"}

# The kinds of special symbol the compiler makes for a type: allowed when the type is.
TYPE_SYMBOL_KINDS = ("typeinfo for ", "typeinfo name for ", "vtable for ", "VTT for ", "construction vtable for ")
# What every object that uses RTTI or exceptions of class type refers to; and the type of a
# cancelled thread's unwinding, which std::condition_variable_any's wait and <future> catch to
# pass it on.
ALLOWED_TYPE_SYMBOLS = ("__cxxabiv1::__*_type_info", "__cxxabiv1::__forced_unwind")
# Built-in types (typeinfo for int, char const*, ...: thrown and caught values).
FUNDAMENTAL_TYPES = {"void", "bool", "char", "signed char", "unsigned char", "wchar_t", "char8_t", "char16_t",
                     "char32_t", "short", "unsigned short", "int", "unsigned int", "long", "unsigned long",
                     "long long", "unsigned long long", "float", "double", "long double", "decltype(nullptr)",
                     "__int128", "unsigned __int128"}

# What to say when a refused name is used: what a student should write instead.
INSTEAD = {
    "exit": "throw an exception (e.g. std::runtime_error); the test decides how the program ends",
    "_exit": "throw an exception (e.g. std::runtime_error)", "quick_exit": "throw an exception",
    "_Exit": "throw an exception", "pthread_exit": "return from the thread's function",
    "getenv": "take what you need as a parameter: the tests set the environment (NVTX's loader reads it: the "
              "course builds your file with NVTX's injection support compiled out, so do not #undef or redefine "
              "NVTX_SUPPORT_* or NVTX_DISABLE)",
    "secure_getenv": "take what you need as a parameter", "environ": "take what you need as a parameter",
    "fopen": "print with printf or std::cout; the lesson needs no files",
    "open": "print with printf or std::cout; the lesson needs no files",
    "write": "print with printf or std::cout", "dprintf": "print with printf or fprintf(stderr, ...)",
    "vdprintf": "print with printf or fprintf(stderr, ...)",
    "read": "the lesson reads no files or input", "fgets": "the lesson reads no input",
    "scanf": "the lesson reads no input", "std::cin": "the lesson reads no input",
    "system": "the lesson starts no programs", "popen": "the lesson starts no programs",
    "fork": "use std::thread for work on several devices", "wordexp": "the lesson starts no programs",
    "dlopen": "link what you call; the CUDA runtime, cuBLAS and NCCL are linked already (NVTX's loader loads "
              "a profiler's library: the course builds your file with it compiled out, so do not #undef or "
              "redefine NVTX_SUPPORT_* or NVTX_DISABLE)",
    "dlsym": "call the function by its name (NVTX's loader does this: the course builds your file with it "
             "compiled out, so do not #undef or redefine NVTX_SUPPORT_* or NVTX_DISABLE)",
    "dl_iterate_phdr": "call the function by its name",
    "ctime": "print durations with std::chrono (local time reads the environment and files)",
    "localtime": "print durations with std::chrono (local time reads the environment and files)",
    "localtime_r": "print durations with std::chrono (local time reads the environment and files)",
    "mktime": "use std::chrono (mktime reads the local time zone from the environment and files), or gmtime_r "
              "for a calendar time in UTC",
    "cudaGetDriverEntryPoint": "call the CUDA runtime function (cuda...) itself",
    "cudaGetDriverEntryPointByVersion": "call the CUDA runtime function (cuda...) itself",
    "syscall": "use the C++ library (std::thread, std::atomic, ...); of syscall() only the futex of <atomic>'s "
               "wait and notify is allowed",
    "longjmp": "throw an exception", "setjmp": "throw an exception", "signal": "the tests handle signals",
    "sigaction": "the tests handle signals", "raise": "throw an exception", "kill": "throw an exception",
    "__cxa_init_primary_exception": "make the exception_ptr with std::make_exception_ptr(e), or inside a catch "
                                    "block with std::current_exception(); a type description of your own "
                                    "cannot be passed",
    "std::filesystem": "the lesson needs no files",
    "std::ios_base_library_init": "nothing: <iostream> makes the standard streams ready",
    "std::set_terminate": "let the exception reach the test", "std::set_unexpected": "let the exception reach the test",
    "std::chrono::tzdb": "print durations with std::chrono (time zones read the environment and files)",
    "std::messages": "write the message in the code (message catalogs are files)",
    "MPI_Abort": "throw an exception: the test decides how the job ends (MPI_Abort ends every rank)",
    "nvshmem_global_exit": "throw an exception: the test decides how the job ends (it ends every PE)",
    "MPI_Comm_spawn": "the ranks are started by mpirun, as the tests do", "MPI_File_": "the lesson needs no files",
    "MPI_Comm_connect": "communicate within MPI_COMM_WORLD or a communicator split from it",
    "MPI_Comm_accept": "communicate within MPI_COMM_WORLD or a communicator split from it",
    "MPI_Open_port": "communicate within MPI_COMM_WORLD or a communicator split from it",
    "MPI_Comm_join": "communicate within MPI_COMM_WORLD or a communicator split from it",
    "MPI_T_": "leave MPI's settings to the launcher", "ompi_mpi_info_env": "take what you need as a parameter",
    "setlocale": "leave the locale as it is (\"\" reads the environment)",
    "strftime": "print the time with std::chrono (a time zone reads the environment and files)",
}

# ----------------------------------------------------------------------------- definitions
# The student's object may not define a global symbol that another input of the test program
# defines (the shared libraries it loads: CUDA runtime, cuBLAS, NCCL, libc, libstdc++, libm,
# libgcc_s; the static libraries it links: course-common, the tests, Catch2), strong or weak,
# in a COMDAT group or not: every call in the program to that function could reach the
# student's version. One exception: a weak definition in a COMDAT group of a C++ name that
# every other input defines weakly too is the same template or inline function emitted from
# the same header (std::string's members, say), which any object may carry; the linker keeps
# the first, and the tests come before the student's code on the link line.
# These names are emitted by the compiler for every object and are never a replacement:
COMPILER_SYMBOLS_PREFIXES = ("DW.ref.", "__gxx_personality", "_GLOBAL_")
# nvcc -rdc=true (lesson 10) gives every relocatable object these one-byte weak markers in its .nvHR*
# sections, as every object of NVSHMEM's device library has them: the same marker, never a replacement
# (exempt only where the student's object defines them weakly, as nvcc does).
NVCC_RDC_WEAK_SYMBOLS = frozenset(f"hostRef{kind}Array{linkage}Linkage" for kind in ("Constant", "Device", "Kernel")
                                  for linkage in ("External", "Internal"))

# ----------------------------------------------------------------------------- content

# Read in the student's source before anything is built (the build itself reads files: an
# assembler's .incbin, a probe with __has_include, an #include by absolute path): each pattern
# with what it is. The build runs in the sandbox too, where none of these finds anything.
REFUSED_SOURCE = (
    (r"\.incbin\b", "an assembler .incbin (it reads a file into the object)"),
    (r"__has_include(_next)?\b", "__has_include (it probes for files)"),
    (r"^\s*#\s*include_next\b", "#include_next"),
    (r"^\s*#\s*include\s*[<\"]\s*/", "an #include by absolute path"),
    (r"^\s*#\s*line\b", "a #line directive (it hides where code comes from)"),
)

# Raw bytes that may not appear anywhere in the object: the mangled name of the test
# framework's namespace, needed to fake one of its exception types by name.
REFUSED_BYTES = (b"N5Catch",)

# Machine instructions that enter the kernel directly (objdump -d of the host code): a second
# look behind the assembly check, which refuses every asm statement.
REFUSED_INSTRUCTIONS = ("syscall", "sysenter", "int    $0x80")

# Code that runs before main(): the functions an object's .init_array (or .ctors, .preinit_array)
# names may call these (mangled names), and nothing else: nvcc's registration of the file's
# kernels, <iostream>'s stream set-up, the registration of static destructors, and what a global
# container or string with contents needs to be made. A global object whose constructor does
# anything more (prints, starts a thread, calls the CUDA runtime, calls through a pointer) must
# become a function-local static (made when first used, inside a test).
ALLOWED_BEFORE_MAIN = {
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaRegisterFunction", "__cudaRegisterVar",
    "__cudaRegisterManagedVar", "__cudaRegisterTexture", "__cudaRegisterSurface", "__cudaInitModule",
    "__cudaUnregisterFatBinary", "atexit", "__cxa_atexit", "_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev",
    "__dso_handle", "_GLOBAL_OFFSET_TABLE_",
    # A global std::vector, std::string, std::map, std::unordered_map, std::set or std::list with
    # contents (`std::vector<int> sizes = {1, 2}`): memory and copies of it, the trees' and hash
    # tables' own helpers, std::allocator<char> (not inlined unoptimised), and the exceptions a
    # failure throws (which end the program before main()). A global std::condition_variable.
    "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZdlPv", "_ZdlPvm", "_ZdaPv", "_ZdaPvm",
    "_ZdlPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "memcpy", "memmove", "memset", "memcmp", "strlen", "__memcpy_chk", "__memmove_chk", "__memset_chk",
    "_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_",
    "_ZSt18_Rb_tree_incrementPSt18_Rb_tree_node_base", "_ZSt18_Rb_tree_decrementPSt18_Rb_tree_node_base",
    "_ZSt18_Rb_tree_incrementPKSt18_Rb_tree_node_base", "_ZSt18_Rb_tree_decrementPKSt18_Rb_tree_node_base",
    "_ZNKSt8__detail20_Prime_rehash_policy11_M_next_bktEm", "_ZNKSt8__detail20_Prime_rehash_policy14_M_need_rehashEmmm",
    "_ZSt11_Hash_bytesPKvmm", "_ZNSt8__detail15_List_node_base7_M_hookEPS0_",
    "_ZNSaIcEC1Ev", "_ZNSaIcEC2Ev", "_ZNSaIcEC1ERKS_", "_ZNSaIcEC2ERKS_", "_ZNSaIcED1Ev", "_ZNSaIcED2Ev",
    "_ZNSt18condition_variableC1Ev",
    "_ZSt17__throw_bad_allocv", "_ZSt28__throw_bad_array_new_lengthv", "_ZSt20__throw_length_errorPKc",
    "_ZSt19__throw_logic_errorPKc", "_ZSt20__throw_out_of_rangePKc", "_ZSt24__throw_out_of_range_fmtPKcz",
    "_ZSt21__glibcxx_assert_failPKciS0_S0_", "__cxa_throw_bad_array_new_length", "_ZSt9terminatev",
    "_Unwind_Resume", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow",
    # The stack protector's failure routine: Ubuntu's GCC (13.3 on the GPU hosts) compiles with
    # -fstack-protector-strong by default, so a global's initializer with an array on its stack
    # checks its canary and calls this, which ends the process, when the canary was overwritten.
    # Seen on the GPU host: correct files with a global table were refused for it (GCC 12 on
    # Debian does not protect by default); the tests compile one with -fstack-protector-all.
    "__stack_chk_fail",
}

# ... and, in an object nvcc compiled with -rdc=true, a call of these names left undefined: nvcc's
# registration of the file's relocatable device code, which the device-link object (made by nvcc -dlink in
# the grader's own build, never by the student) defines.
ALLOWED_BEFORE_MAIN_PREFIXES = ("__cudaRegisterLinkedBinary_",)

# Sections of a student object: these names (exactly, or followed by '.' and anything) and no
# other. A section attribute that puts data into .text, or a section of its own, is refused.
ALLOWED_SECTIONS = (
    ".text", ".data", ".bss", ".rodata", ".tdata", ".tbss", ".data.rel.ro", ".data.rel", ".data.rel.local",
    ".data.rel.ro.local", ".init_array", ".fini_array", ".gcc_except_table", ".eh_frame", ".note.GNU-stack",
    ".note.gnu.property", ".comment", ".group", ".debug_info", ".debug_abbrev", ".debug_aranges",
    ".debug_line", ".debug_line_str", ".debug_str", ".debug_loclists", ".debug_rnglists", ".debug_loc",
    ".debug_ranges", ".debug_frame", ".nv_fatbin", ".nvFatBinSegment", "__nv_relfatbin", "__nv_module_id",
    "__nv_managed_data__",  # nvcc's: the host side of a __managed__ variable (data, never code)
    # nvcc -rdc=true (lesson 10's file, device-linked with NVSHMEM's device library): read-only lists of the
    # file's kernels, device variables and constants for the registration of the linked device code.
    ".nvHRCE", ".nvHRCI", ".nvHRDE", ".nvHRDI", ".nvHRKE", ".nvHRKI",
    ".symtab", ".strtab", ".shstrtab", ".rela", ".rel", ".note",
)
