#include "report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "load/input_error.h"

namespace ringsim {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void cannot_write(const std::string& path, int error) {
  throw InputError({path, 0, 0, ""}, std::string("cannot write the output file: ") + std::strerror(error));
}

// Writes all of `content` to `fd` and closes it; the errno of the first failure, or 0.
int write_all_and_close(int fd, const std::string& content) {
  int error = 0;
  for (std::size_t done = 0; done < content.size() && error == 0;) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = n < 0 ? errno : ENOSPC;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

bool is_device_or_pipe(const struct stat& st) {
  return S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) cannot_write(path, EISDIR);
  // A device or pipe is written as it is: renaming over it would replace the device itself.
  if (exists && is_device_or_pipe(st)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) cannot_write(path, errno);
    if (const int error = write_all_and_close(fd, content)) cannot_write(path, error);
    return;
  }
  // Through a symbolic link, the file it points to is replaced and the link kept.
  std::error_code ec;
  const fs::path target = exists && fs::is_symlink(path, ec) ? fs::canonical(path, ec) : fs::path(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) cannot_write(path, errno);
  if (const int error = write_all_and_close(fd, content)) {
    fs::remove(tmp, ec);
    cannot_write(path, error);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int error = errno;
    fs::remove(tmp, ec);
    cannot_write(path, error);
  }
}

void check_output_path(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  if (fs::is_directory(path, ec)) cannot_write(path, EISDIR);
  if (!fs::is_directory(folder, ec)) cannot_write(path, ENOENT);
  if (::access(folder.c_str(), W_OK) != 0) cannot_write(path, errno);
}

void add_file(std::vector<NamedFile>& files, const std::string& option, const std::optional<std::string>& path) {
  if (path && !path->empty()) files.push_back({option, *path});
}

void add_folder(std::vector<NamedFile>& files, const std::string& option, const std::string& folder) {
  std::error_code ec;
  std::vector<std::string> found;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) found.push_back(it->path().string());
  std::sort(found.begin(), found.end());
  for (auto& f : found) files.push_back({option, std::move(f)});
}

std::vector<NamedFile> run_inputs(const std::string& catalog_dir, const std::string& scenario,
                                  const std::string& calibration) {
  std::vector<NamedFile> in;
  add_file(in, "the scenario", scenario);
  add_file(in, "the calibration overlay", calibration);
  add_folder(in, "the catalog's file", catalog_dir);
  return in;
}

namespace {

// Whether `a` and `b` name one file: the same inode where both exist, else the same absolute path once
// symbolic links and "." and ".." are resolved.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code ec1, ec2;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a), ec1), cb = fs::weakly_canonical(fs::absolute(b), ec2);
  return !ec1 && !ec2 && ca == cb;
}

bool is_device(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && is_device_or_pipe(st);
}

}  // namespace

void check_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedFile& out = outputs[i];
    for (const NamedFile& in : inputs)
      if (same_file(out.path, in.path))
        throw InputError({out.path, 0, 0, ""}, out.option + " would overwrite " + in.option + " '" + in.path +
                                                   "', the same file: give the output another name");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(out.path, outputs[j].path) && !is_device(out.path))
        throw InputError({out.path, 0, 0, ""}, out.option + " and " + outputs[j].option + " (" + outputs[j].path +
                                                   ") name the same file, and one would overwrite the other: give "
                                                   "each its own name");
    check_output_path(out.path);
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string csv_number(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace ringsim
