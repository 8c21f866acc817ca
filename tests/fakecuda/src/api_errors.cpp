// cuGetErrorName / cuGetErrorString for every CUresult cuda.h defines. The description is the
// name in words ("CUDA_ERROR_INVALID_VALUE" -> "invalid value"), so there is one table to keep.
#include "cuda_abi.hpp"

#include <cctype>
#include <string>
#include <unordered_map>

namespace {

struct ErrorText {
  const char* name;
  std::string description;
};

const std::unordered_map<int, ErrorText>& error_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<int, ErrorText>;
    auto describe = [](const char* name) {
      std::string words = name;
      const std::string prefix = "CUDA_ERROR_";
      words = words.rfind(prefix, 0) == 0 ? words.substr(prefix.size()) : std::string("no error");
      for (char& c : words) {
        c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      return words;
    };
#define FAKECUDA_ERROR(name) t->emplace(static_cast<int>(name), ErrorText{#name, describe(#name)});
#include "error_names.def"
#undef FAKECUDA_ERROR
    return t;
  }();
  return *table;
}

// cuGetErrorName / cuGetErrorString: one lookup, `text` picks the entry's name or description.
template <class Text>
CUresult look_up(CUresult error, const char** pStr, Text text) {
  if (pStr == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto it = error_table().find(static_cast<int>(error));
  if (it == error_table().end()) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = text(it->second);
  return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  return look_up(error, pStr, [](const auto& entry) { return entry.name; });
}

FAKECUDA_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return look_up(error, pStr, [](const auto& entry) { return entry.description.c_str(); });
}
