// Running a program for an integration test: its own environment (the test's, minus everything
// memtool/fakecuda/preload related, plus what the test sets), stdout and stderr captured.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace memtool::testing {

struct Outcome {
  int status = -1;  // exit code, or 128+signal
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline Outcome run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                   const std::string& work_dir) {
  std::filesystem::create_directories(work_dir);
  const std::string out_path = work_dir + "/stdout";
  const std::string err_path = work_dir + "/stderr";
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string assignment(*entry);
    if (assignment.rfind("MEMTOOL_", 0) == 0 || assignment.rfind("FAKECUDA_", 0) == 0 ||
        assignment.rfind("LD_PRELOAD=", 0) == 0 || assignment.rfind("LD_LIBRARY_PATH=", 0) == 0) {
      continue;
    }
    if (env.count(assignment.substr(0, assignment.find('='))) != 0) continue;  // the test's value wins
    environment.push_back(assignment);
  }
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  const pid_t child = fork();
  if (child == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    if (chdir(work_dir.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& assignment : environment) envp.push_back(assignment.data());
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  Outcome outcome;
  int status = 0;
  waitpid(child, &status, 0);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  outcome.out = slurp(out_path);
  outcome.err = slurp(err_path);
  return outcome;
}

}  // namespace memtool::testing
