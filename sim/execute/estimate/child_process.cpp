#include "execute/estimate/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "load/input_error.h"

extern char** environ;

namespace ringsim {

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;  // the read end of the pipe it writes its text to
  std::string text;
};

// Forks a child that runs f and writes what it returns (or its exception's message) to a pipe.
Child start_child(const std::function<std::string()>& f) {
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
  return {pid, fds[0], {}};
}

// Reads what is there; false once the child closed its end.
bool read_some(Child& c) {
  char buf[65536];
  const ssize_t n = read(c.fd, buf, sizeof buf);
  if (n > 0) {
    c.text.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  close(c.fd);
  c.fd = -1;
  return false;
}

// Waits for the child to exit: true when it succeeded.
bool reap(const Child& c) {
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& f) {
  Child c = start_child(f);
  while (read_some(c)) {
  }
  if (!reap(c)) throw std::runtime_error("child process failed: " + c.text);
  return c.text;
}

int child_jobs() {
  if (const char* v = std::getenv("RINGSIM_JOBS")) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 1 || n > 1024)
      throw InputError({"", 0, 0, std::string("RINGSIM_JOBS=") + v},
                       "expected a whole number from 1 to 1024 (children run at once)");
    return static_cast<int>(n);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::vector<std::string> run_in_children(const std::vector<std::function<std::string()>>& tasks) {
  const std::size_t jobs = static_cast<std::size_t>(child_jobs());
  std::vector<Child> children(tasks.size());
  std::vector<bool> ok(tasks.size(), false);
  std::size_t next = 0, running = 0;
  while (next < tasks.size() || running > 0) {
    for (; next < tasks.size() && running < jobs; ++next, ++running) children[next] = start_child(tasks[next]);
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < next; ++i)
      if (children[i].fd >= 0) {
        fds.push_back({children[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll failed");
    }
    for (std::size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents != 0 && !read_some(children[which[k]])) {
        ok[which[k]] = reap(children[which[k]]);
        --running;
      }
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!ok[i]) throw std::runtime_error("child process failed: " + children[i].text);
    out.push_back(std::move(children[i].text));
  }
  return out;
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
