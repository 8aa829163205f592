// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// Everyday C++ the object checks must accept (test_grader.py, AllowlistObjectTests): <regex>, <cctype>,
// <future> (std::async, std::promise, std::packaged_task), std::make_exception_ptr, the host's name and
// the process id in a message, a thread's name.
#include <cctype>
#include <future>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <pthread.h>
#include <limits.h>

bool is_identifier(const std::string& text) {
    static const std::regex pattern{"[A-Za-z_][A-Za-z0-9_]*"};
    return std::regex_match(text, pattern);
}
int count_alnum(const std::string& text) {
    int n = 0;
    for (unsigned char c : text) n += std::isalnum(c) ? 1 : 0;
    return n + (std::isspace(text.empty() ? ' ' : text[0]) ? 1 : 0) + std::toupper('a');
}
int twice_async(int x) {
    auto future = std::async(std::launch::async, [x] { return 2 * x; });
    return future.get();
}
int through_promise(int x) {
    std::promise<int> promise;
    std::future<int> future = promise.get_future();
    std::thread worker([&promise, x] {
        try {
            if (x < 0) throw std::invalid_argument("negative");
            promise.set_value(x + 1);
        } catch (...) {
            promise.set_exception(std::current_exception());
        }
    });
    worker.join();
    return future.get();
}
std::exception_ptr made(int x) { return std::make_exception_ptr(std::runtime_error("bad " + std::to_string(x))); }
std::string where() {
    char host[HOST_NAME_MAX + 1] = {};
    gethostname(host, sizeof host);
    return std::string(host) + ":" + std::to_string(getpid());
}
void name_thread() { pthread_setname_np(pthread_self(), "worker"); }
int packaged(int x) {
    std::packaged_task<int(int)> task([](int v) { return v * 3; });
    auto f = task.get_future();
    task(x);
    return f.get();
}
