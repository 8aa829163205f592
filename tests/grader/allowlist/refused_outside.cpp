// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// What reaches outside the process: each call must stay refused by the object checks.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <clocale>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

int reach_outside(const char* path) {
    std::FILE* file = std::fopen(path, "r");                       // fopen
    const char* home = std::getenv("HOME");                         // getenv
    int status = std::system("true");                               // system
    void* library = dlopen("libm.so.6", RTLD_NOW);                  // dlopen
    std::ofstream out(path);                                        // std::basic_ofstream
    bool there = std::filesystem::exists(path);                     // std::filesystem
    std::string word;
    std::cin >> word;                                               // std::cin
    std::setlocale(LC_ALL, "");                                     // setlocale
    std::time_t now = std::time(nullptr);
    std::tm* local = std::localtime(&now);                          // localtime
    std::set_terminate([] { std::abort(); });                       // std::set_terminate
    if (status == 0) std::exit(0);                                  // exit
    return (file != nullptr) + (home != nullptr) + (library != nullptr) + there + local->tm_hour;
}
