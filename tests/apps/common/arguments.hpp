// One strict pass over a test program's command line: a typo or a value out of range never runs a
// different test — the program says why on stderr and exits 2. Shared by every app's option
// parser (no third-party parser: the apps also build on a GPU machine with only the toolkit).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace apps {

class Arguments {
 public:
  Arguments(const char* program, int argc, char** argv) : program_(program), argc_(argc), argv_(argv) {}

  // Moves to the next argument; false when none is left.
  bool next() { return ++index_ < argc_; }
  [[nodiscard]] char* current() const { return argv_[index_]; }
  [[nodiscard]] bool is(std::string_view name) const { return name == current(); }
  [[nodiscard]] bool is_help() const { return is("--help") || is("-h"); }
  [[nodiscard]] const char* program() const { return program_; }
  // The option whose value was read last.
  [[nodiscard]] const char* option() const { return current_option_; }

  // The current option's value: the next argument, which it consumes.
  const char* value();
  // The value as an integer in [min, max].
  long long integer(long long min, long long max) { return integer_of(value(), min, max); }
  // `text` (part of the current option's value) as an integer in [min, max].
  long long integer_of(const char* text, long long min, long long max) const;
  // The value as a number in (above, max].
  double number_above(double above, double max);
  // The value as one of the names of `choices`.
  template <typename T>
  T choice(std::initializer_list<std::pair<std::string_view, T>> choices) {
    const char* text = value();
    std::string names;
    for (const auto& [name, result] : choices) {
      if (name == text) return result;
      names += names.empty() ? "" : ", ";
      names += name;
    }
    fail("%s wants one of %s, got '%s'", current_option_, names.c_str(), text);
  }

  // Says what is wrong with the command line and exits 2.
  [[noreturn]] void fail(const char* format, ...) const __attribute__((format(printf, 2, 3)));

 private:
  const char* program_;
  int argc_;
  char** argv_;
  int index_ = 0;
  const char* current_option_ = "";
};

}  // namespace apps
