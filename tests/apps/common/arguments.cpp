// The strict command-line reader of the test programs (arguments.hpp).
#include "arguments.hpp"

#include <cerrno>
#include <cstdarg>

namespace apps {

const char* Arguments::value() {
  current_option_ = current();
  if (index_ + 1 >= argc_) fail("%s needs a value", current_option_);
  return argv_[++index_];
}

long long Arguments::integer_of(const char* text, long long min, long long max) const {
  errno = 0;
  char* end = nullptr;
  const long long result = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || result < min || result > max)
    fail("%s wants an integer in [%lld, %lld], got '%s'", current_option_, min, max, text);
  return result;
}

double Arguments::number_above(double above, double max) {
  const char* text = value();
  errno = 0;
  char* end = nullptr;
  const double result = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(result > above) || result > max)
    fail("%s wants a number in (%g, %g], got '%s'", current_option_, above, max, text);
  return result;
}

void Arguments::fail(const char* format, ...) const {
  std::fprintf(stderr, "%s: ", program_);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::exit(2);
}

}  // namespace apps
