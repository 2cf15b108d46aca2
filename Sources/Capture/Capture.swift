// The capture streams live in Location/, Audio/ and Health/.
