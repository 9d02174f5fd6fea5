#include "execute/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace ringsim {

std::string run_in_child(const std::function<std::string()>& f) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int status = 0;
    try {
      out = f();
    } catch (const std::exception& e) {
      out = e.what();
      status = 1;
    }
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  std::string result;
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) result.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child process failed: " + result);
  return result;
}

pid_t start_program(const Launch& l) {
  if (l.argv.empty()) throw std::runtime_error("no program to start");
  std::vector<std::string> args = l.argv, env = l.extra_env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const int flags = O_WRONLY | O_CREAT | O_TRUNC;
  if (!l.stdout_file.empty()) posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, l.stdout_file.c_str(), flags, 0644);
  if (!l.stderr_file.empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, l.stderr_file.c_str(), flags, 0644);
  else if (!l.stdout_file.empty())
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  std::fflush(nullptr);  // what this process buffered comes before the child's output
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + l.argv[0] + ": " + std::strerror(rc));
  return pid;
}

int run_program(const Launch& l) {
  const pid_t pid = start_program(l);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waiting for " + l.argv[0] + ": " + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string shell_words(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789_-+=.,/:@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace ringsim
