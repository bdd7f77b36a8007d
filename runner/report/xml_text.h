// Text for an XML 1.0 attribute or element (JUnit reports, the benches' SVG figures): the five
// markup characters as entities, and every byte XML cannot hold (a control character but tab,
// newline and carriage return, or a byte of no well-formed UTF-8 sequence: a student's output
// or a file's name may be anything) written as \xNN.
#pragma once

#include <string>

namespace wb {

std::string EscapeXml(const std::string& text);

}  // namespace wb
