# memtool_warnings(target): the warning set every first-party target compiles with.
function(memtool_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
      -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
      -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough>)
  if(MEMTOOL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
